/**
 * `sandpool usage` and `sandpool policy apply -f` / `policy export` as an operator runs them,
 * against a real `sandpool dev` (process runtime): the usage table, --json and --csv of real
 * calls, one workspace's usage only; a policies file's diff, dry run, apply, second apply that
 * changes nothing, export read back; an invalid file refused whole with every problem listed;
 * exit codes 0 (done), 1 (refused or unreachable), 2 (bad usage). Needs `npm run build` first.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { runCli } from "../support/cli.js";
import { type DevCliGateway, freePort, startDevCliGateway } from "../support/dev-cli-gateway.js";

let gateway: DevCliGateway | undefined;
let url: string;
let adminToken: string;
let devToken: string;

beforeAll(async () => {
  gateway = await startDevCliGateway("usage");
  ({ url, adminToken, devToken } = gateway);
  // Usage to report: one session of workspace "dev" (dev mode's token) with two calls.
  const headers = { authorization: `Bearer ${devToken}`, "content-type": "application/json" };
  const created = await fetch(`${url}/sessions`, { method: "POST", headers });
  expect(created.status).toBe(201);
  const { session_id: id } = (await created.json()) as { session_id: string };
  for (let i = 0; i < 2; i++) {
    const exec = await fetch(`${url}/sessions/${id}/exec`, {
      method: "POST",
      headers,
      body: JSON.stringify({ tool: "code_execution", input: { code: "print(1)" } }),
    });
    expect(exec.status).toBe(200);
  }
  expect((await fetch(`${url}/sessions/${id}`, { method: "DELETE", headers })).status).toBeLessThan(300);
}, 150_000);

afterAll(() => gateway?.stop(), 30_000);

const hermetic = { SANDPOOL_URL: "", SANDPOOL_ADMIN_TOKEN: "" };
const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  runCli(args, { env: { ...hermetic, ...env }, timeoutMs: 30_000 });
const asAdmin = (args: string[]) => cli(args, { SANDPOOL_URL: url, SANDPOOL_ADMIN_TOKEN: adminToken });

describe("sandpool usage", () => {
  it("prints a table of the workspace's buckets, totals and breakdowns by tool and image", async () => {
    const result = await asAdmin(["usage", "--workspace", "dev", "--since", "2h", "--by", "hour"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^usage of dev from \S+ to \S+, by hour \(UTC\)$/m);
    expect(result.stdout).toMatch(/^START\s+SESSIONS\s+EXEC CALLS\s+EXEC S\s+SANDBOX S\s+CPU S$/m);
    expect(result.stdout).toMatch(/^TOTAL\s+1\s+2\s+\S+\s+\S+\s+\S+$/m);
    expect(result.stdout).toMatch(/^by tool:\nTOOL\s+EXEC CALLS\s+EXEC S\ncode_execution\s+2\s+/m);
    expect(result.stdout).toMatch(/^by image:\nIMAGE\s+SESSIONS/m);
  }, 60_000);

  it("prints the admin API's JSON with --json and CSV with --csv", async () => {
    const json = await asAdmin(["usage", "--workspace", "dev", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as {
      workspace: string;
      by: string;
      totals: Record<string, number>;
    };
    expect(report).toMatchObject({ workspace: "dev", by: "day", totals: { sessions: 1, execCalls: 2 } });

    const csv = await asAdmin(["usage", "--workspace", "dev", "--csv"]);
    expect(csv.code, csv.stderr).toBe(0);
    const lines = csv.stdout.trim().split("\r\n");
    expect(lines[0]).toBe(
      "start,dimension,key,sessions,execCalls,execSeconds,sandboxSeconds,cpuSeconds,memoryPeakBytes,filesIn,bytesIn,filesOut,bytesOut,denied,hibernations,checkpointBytes",
    );
    expect(lines.some((line) => /^\S+,total,,1,2,/.test(line))).toBe(true);
    expect(lines.some((line) => /^\S+,tool,code_execution,,2,/.test(line))).toBe(true);
  }, 60_000);

  it("shows another workspace none of dev's usage", async () => {
    const result = await asAdmin(["usage", "--workspace", "another-team", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).totals).toMatchObject({ sessions: 0, execCalls: 0 });
  });

  it("refuses a workspace token (exit 1, 403 explained)", async () => {
    const result = await cli(["usage", "--workspace", "dev", "--url", url, "--token", devToken]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^sandpool usage: the token is valid but is not an admin token \(403 auth\.forbidden\)/m,
    );
  });

  it.each([
    ["no workspace", ["usage", "--token", "t"], /required option '--workspace <id>' not specified/],
    ["a bad workspace", ["usage", "--workspace", "no good", "--token", "t"], /not a valid workspace id/],
    [
      "a bad bucket size",
      ["usage", "--workspace", "a", "--by", "week", "--token", "t"],
      /Allowed choices are hour, day/,
    ],
    [
      "a bad --since",
      ["usage", "--workspace", "a", "--since", "yesterday", "--token", "t"],
      /expected a duration/,
    ],
    ["--csv with --json", ["usage", "--workspace", "a", "--csv", "--json", "--token", "t"], /contradict/],
    ["no token", ["usage", "--workspace", "a", "--url", "http://127.0.0.1:1"], /no admin token/],
  ])("exits 2 on %s", async (_name, args, message) => {
    const result = await cli(args as string[]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(message as RegExp);
  });

  it("names an unreachable gateway, with exit code 1", async () => {
    const port = await freePort();
    const result = await cli([
      "usage",
      "--workspace",
      "a",
      "--url",
      `http://127.0.0.1:${port}`,
      "--token",
      "t",
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^sandpool usage: cannot reach sandpool at /m);
  });
});

describe("sandpool policy apply -f", () => {
  it("shows the diff, applies it, changes nothing the second time, and exports what it applied", async () => {
    const file = path.join(gateway!.dataDir, "policies.yaml");
    await writeFile(
      file,
      "policies:\n  team-x:\n    maxConcurrentSessions: 2\n    allowedTools: [code_execution]\n  team-y:\n    enabled: false\n",
    );
    const dry = await asAdmin(["policy", "apply", "-f", file, "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/^\+ team-x: created: .*maxConcurrentSessions=2/m);
    expect(dry.stdout).toMatch(/^\+ team-y: created: enabled=false$/m);
    expect(dry.stdout).toMatch(
      /^dry run: 2 to create, 0 to update, 0 to delete, 0 unchanged; nothing was changed/m,
    );
    expect((await asAdmin(["policy", "get", "team-x"])).stdout).toMatch(/no policy row/);

    const applied = await asAdmin(["policy", "apply", "-f", file]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(/^applied: 2 created, 0 updated, 0 deleted, 0 unchanged$/m);
    expect((await asAdmin(["policy", "get", "team-x"])).stdout).toMatch(
      /^maxConcurrentSessions\s+2\s+workspace row$/m,
    );

    const again = await asAdmin(["policy", "apply", "-f", file]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe(
      `nothing to change: the policies in force already match ${file} (2 workspaces)`,
    );

    const exported = await asAdmin(["policy", "export"]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(parse(exported.stdout)).toEqual({
      policies: {
        "team-x": { maxConcurrentSessions: 2, allowedTools: ["code_execution"] },
        "team-y": { enabled: false },
      },
    });

    await writeFile(file, "policies:\n  team-x:\n    maxConcurrentSessions: 3\n");
    const next = await asAdmin(["policy", "apply", "-f", file, "--json"]);
    expect(next.code, next.stderr).toBe(0);
    const answer = JSON.parse(next.stdout) as { changes: { workspace: string; action: string }[] };
    expect(answer.changes.map((change) => `${change.action}:${change.workspace}`)).toEqual([
      "update:team-x",
      "delete:team-y",
    ]);
  }, 90_000);

  it("refuses the whole file when any entry is invalid, listing every problem (exit 1)", async () => {
    const before = (await asAdmin(["policy", "export", "--json"])).stdout;
    const file = path.join(gateway!.dataDir, "bad.yaml");
    await writeFile(
      file,
      "policies:\n  ok-team:\n    maxConcurrentSessions: 1\n  greedy:\n    maxConcurrentSessions: 100000\n  images:\n    allowedImages: [evil/image]\n",
    );
    const result = await asAdmin(["policy", "apply", "-f", file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/refused the request \(422 request\.malformed\):/);
    expect(result.stderr).toMatch(
      /^ {2}- greedy: maxConcurrentSessions: 100000 is above the deployment ceiling/m,
    );
    expect(result.stderr).toMatch(
      /^ {2}- images: allowedImages: 'evil\/image' is not allowed by the deployment$/m,
    );
    expect((await asAdmin(["policy", "export", "--json"])).stdout).toBe(before);
  }, 60_000);

  it.each([
    ["a file that is not YAML", "policies: [unclosed\n", /is not valid YAML/],
    ["a duplicate workspace", "policies:\n  a: {}\n  a: {}\n", /is not valid YAML/],
    ["a list at the top", "- a\n", /must hold a map with a 'policies' key/],
  ])("exits 2 on %s", async (_name, content, message) => {
    const file = path.join(gateway!.dataDir, "usage-error.yaml");
    await writeFile(file, content);
    const result = await asAdmin(["policy", "apply", "-f", file]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  it("exits 2 without -f and on a missing file", async () => {
    expect((await asAdmin(["policy", "apply"])).code).toBe(2);
    const missing = await asAdmin(["policy", "apply", "-f", path.join(gateway!.dataDir, "nope.yaml")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read/);
  });
});
