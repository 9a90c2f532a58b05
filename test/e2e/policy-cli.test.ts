import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { type DevCliGateway, freePort, startDevCliGateway } from "../support/dev-cli-gateway.js";

let gateway: DevCliGateway | undefined;
let url: string;
let adminToken: string;
let devToken: string;

beforeAll(async () => {
  gateway = await startDevCliGateway("policy");
  ({ url, adminToken, devToken } = gateway);
}, 120_000);

afterAll(() => gateway?.stop(), 30_000);

/** Neither the test's environment nor a developer's shell leaks a URL or token in. */
const hermetic = { SANDPOOL_URL: "", SANDPOOL_ADMIN_TOKEN: "" };

function policy(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(["policy", ...args], { env: { ...hermetic, ...env }, timeoutMs: 30_000 });
}

/** `policy <args>` against the dev gateway with its admin token. */
function admin(args: string[]) {
  return policy([...args, "--url", url, "--token", adminToken]);
}

/** A row of `policy get`'s table: field, value in force, source. */
function tableRow(field: string, value: string, source: "deployment" | "workspace row"): RegExp {
  const escaped = value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^${field}\\s+${escaped}\\s+${source}$`, "m");
}

describe("sandpool policy --help", () => {
  it("is listed by sandpool --help and lists its sub-commands with examples", async () => {
    const top = await runCli(["--help"]);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/^\s+policy\s+read and edit workspace policy through the admin API/m);
    const help = await policy(["--help"]);
    expect(help.code).toBe(0);
    for (const command of ["list", "get", "set", "delete", "audit", "usage"])
      expect(help.stdout).toMatch(new RegExp(`^\\s+${command} \\[options\\]`, "m"));
    expect(help.stdout).toMatch(/Examples:\n\s+export SANDPOOL_URL=/);
    expect(help.stdout).toMatch(/Exit codes: 0 done, 1 refused by the gateway or unreachable, 2 bad usage/);
  });

  it("documents every editable field of policy set, and the connection options", async () => {
    const help = await policy(["set", "--help"]);
    expect(help.code).toBe(0);
    for (const flag of [
      "--max-concurrent-sessions <n>",
      "--sessions-per-minute <n>",
      "--exec-seconds-per-day <n>",
      "--allowed-tools <list>",
      "--allowed-images <list>",
      "--default-image <image>",
      "--exec-timeout-ceiling <s>",
      "--idle-timeout-ceiling <s>",
      "--max-lifetime-ceiling <s>",
      "--max-file-bytes <n>",
      "--resource-class <class>",
      "--enable",
      "--disable",
      "--clear <field>",
      "--json",
    ])
      expect(help.stdout).toContain(flag);
    expect(help.stdout).toMatch(/env: SANDPOOL_URL/);
    expect(help.stdout).toMatch(/env: SANDPOOL_ADMIN_TOKEN/);
    expect(help.stdout).toMatch(/Examples:\n\s+sandpool policy set team-a/);
  });
});

describe("sandpool policy against sandpool dev", () => {
  it("walks a workspace through set, get, list, audit, usage and delete", async () => {
    const empty = await admin(["list"]);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stdout).toMatch(/no workspace has a policy row/);

    const set = await admin([
      "set",
      "team-a",
      "--max-concurrent-sessions",
      "3",
      "--sessions-per-minute",
      "10",
      "--allowed-tools",
      "code_execution,bash_code_execution",
      "--exec-timeout-ceiling",
      "60",
    ]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/^updated the policy of team-a/m);
    expect(set.stdout).toMatch(tableRow("maxConcurrentSessions", "3", "workspace row"));

    const get = await admin(["get", "team-a"]);
    expect(get.code, get.stderr).toBe(0);
    expect(get.stdout).toMatch(/^workspace team-a: policy row version 1, updated \S+ by dev-admin$/m);
    expect(get.stdout).toMatch(/^FIELD\s+VALUE IN FORCE\s+SOURCE$/m);
    expect(get.stdout).toMatch(tableRow("maxConcurrentSessions", "3", "workspace row"));
    expect(get.stdout).toMatch(tableRow("sessionsPerMinute", "10", "workspace row"));
    expect(get.stdout).toMatch(
      tableRow("allowedTools", "code_execution,bash_code_execution", "workspace row"),
    );
    expect(get.stdout).toMatch(tableRow("execTimeoutCeilingSeconds", "60", "workspace row"));
    expect(get.stdout).toMatch(tableRow("allowedImages", "sandpool/sandbox:dev", "deployment"));
    expect(get.stdout).toMatch(/^execSecondsPerDay\s+\d+\s+deployment$/m);

    // The same through the environment, and as raw JSON.
    const json = await policy(["get", "team-a", "--json"], {
      SANDPOOL_URL: url,
      SANDPOOL_ADMIN_TOKEN: adminToken,
    });
    expect(json.code, json.stderr).toBe(0);
    const view = JSON.parse(json.stdout) as {
      configured: boolean;
      row: { version: number };
      effective: Record<string, unknown>;
      sources: Record<string, string>;
    };
    expect(view).toMatchObject({
      workspace: "team-a",
      configured: true,
      row: { version: 1, maxConcurrentSessions: 3 },
      effective: { maxConcurrentSessions: 3, sessionsPerMinute: 10 },
      sources: { maxConcurrentSessions: "workspace", execSecondsPerDay: "deployment" },
    });

    // Only the fields given change; --clear removes a narrowing.
    const cleared = await admin([
      "set",
      "team-a",
      "--clear",
      "max-concurrent-sessions",
      "--max-file-bytes",
      "1000000",
    ]);
    expect(cleared.code, cleared.stderr).toBe(0);
    expect(cleared.stdout).toMatch(/^maxConcurrentSessions\s+\d+\s+deployment$/m);
    expect(cleared.stdout).toMatch(tableRow("maxFileBytes", "1000000", "workspace row"));
    expect(cleared.stdout).toMatch(tableRow("sessionsPerMinute", "10", "workspace row"));

    const list = await admin(["list"]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^WORKSPACE\s+ENABLED\s+VERSION\s+UPDATED\s+BY\s+NARROWS$/m);
    expect(list.stdout).toMatch(/^team-a\s+true\s+2\s+\S+\s+dev-admin\s+.*sessionsPerMinute=10/m);

    const usage = await admin(["usage", "team-a", "--since", "1h"]);
    expect(usage.code, usage.stderr).toBe(0);
    expect(usage.stdout).toMatch(/^usage of team-a from \S+ to \S+$/m);
    expect(usage.stdout).toMatch(/no usage recorded in that window/);

    const deleted = await admin(["delete", "team-a"]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toMatch(/removed the policy row of team-a/);
    const after = await admin(["get", "team-a"]);
    expect(after.stdout).toMatch(/^workspace team-a: no policy row; the deployment defaults apply$/m);
    expect(after.stdout).toMatch(tableRow("sessionsPerMinute", "600", "deployment"));

    const audit = await admin(["audit", "team-a"]);
    expect(audit.code, audit.stderr).toBe(0);
    const lines = audit.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^ID\s+AT\s+ACTOR\s+CHANGE$/);
    expect(lines.slice(1)).toHaveLength(3);
    expect(lines[1]).toMatch(/^\d+\s+\S+\s+dev-admin\s+deleted/);
    expect(lines[2]).toMatch(
      /^\d+\s+\S+\s+dev-admin\s+updated: maxConcurrentSessions 3 -> unset, maxFileBytes unset -> 1000000$/,
    );
    expect(lines[3]).toMatch(/^\d+\s+\S+\s+dev-admin\s+created: .*maxConcurrentSessions=3/);
    const limited = await admin(["audit", "team-a", "--limit", "1", "--json"]);
    expect((JSON.parse(limited.stdout) as { entries: unknown[] }).entries).toHaveLength(1);
  }, 120_000);

  it("puts the kill switch in force on the next CreateSession", async () => {
    expect(devToken).not.toBe("");
    const disabled = await admin(["set", "dev", "--disable"]);
    expect(disabled.code, disabled.stderr).toBe(0);
    expect(disabled.stdout).toMatch(tableRow("enabled", "false", "workspace row"));
    const res = await fetch(`${url}/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${devToken}` },
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { detail: { code: string } }).detail.code).toBe(
      "policy.workspace_disabled",
    );
    expect((await admin(["delete", "dev"])).code).toBe(0);
  }, 60_000);

  it("lists every problem of a refused edit, one per line, with exit code 1", async () => {
    const refused = await admin([
      "set",
      "team-b",
      "--max-concurrent-sessions",
      "5000",
      "--exec-timeout-ceiling",
      "100000",
      "--allowed-images",
      "evil/image",
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toMatch(/refused the request \(422 request\.malformed\):/);
    expect(refused.stderr).toMatch(
      /^ {2}- execTimeoutCeilingSeconds: 100000 is above the deployment ceiling of \d+$/m,
    );
    expect(refused.stderr).toMatch(
      /^ {2}- maxConcurrentSessions: 5000 is above the deployment ceiling of \d+$/m,
    );
    expect(refused.stderr).toMatch(/^ {2}- allowedImages: 'evil\/image' is not allowed by the deployment$/m);
    const get = await admin(["get", "team-b"]);
    expect(get.stdout).toMatch(/no policy row/);
  }, 60_000);

  it("explains a refused token (401) and a token that is not an admin token (403)", async () => {
    const ordinary = await policy(["list", "--url", url, "--token", devToken]);
    expect(ordinary.code).toBe(1);
    expect(ordinary.stderr).toMatch(/the token is valid but is not an admin token \(403 auth\.forbidden\)/);
    expect(ordinary.stderr).toMatch(/admin claim \(auth\.adminClaim, default sandpool_admin\) is true/);

    const garbage = await policy(["list", "--url", url, "--token", "not-a-token"]);
    expect(garbage.code).toBe(1);
    expect(garbage.stderr).toMatch(/the gateway refused the token \(401 auth\.invalid\)/);
    expect(garbage.stderr).toMatch(/SANDPOOL_ADMIN_TOKEN/);
  }, 60_000);

  it("names an unreachable gateway, with exit code 1", async () => {
    const port = await freePort();
    const result = await policy(["list", "--url", `http://127.0.0.1:${port}`, "--token", adminToken]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(`^sandpool policy: cannot reach sandpool at http://127\\.0\\.0\\.1:${port}: \\S`, "m"),
    );
  });
});

describe("bad usage exits with code 2", () => {
  it.each([
    [
      "no admin token",
      ["list", "--url", "http://127.0.0.1:1"],
      /no admin token: pass --token or set SANDPOOL_ADMIN_TOKEN/,
    ],
    ["nothing to change", ["set", "team-a", "--token", "t"], /nothing to change/],
    ["a malformed workspace id", ["get", "not valid", "--token", "t"], /not a valid workspace id/],
    ["a missing workspace", ["get", "--token", "t"], /missing required argument 'workspace'/],
    ["an unknown option", ["list", "--bogus", "--token", "t"], /unknown option '--bogus'/],
    [
      "a number that is not one",
      ["set", "team-a", "--sessions-per-minute", "ten", "--token", "t"],
      /expected a whole number/,
    ],
    [
      "an unknown field to clear",
      ["set", "team-a", "--clear", "colour", "--token", "t"],
      /unknown field 'colour'/,
    ],
    ["--enable with --disable", ["set", "team-a", "--enable", "--disable", "--token", "t"], /contradict/],
    ["a URL that is not one", ["list", "--url", "not a url", "--token", "t"], /is not a URL/],
    ["a bad --since", ["usage", "team-a", "--since", "yesterday", "--token", "t"], /expected a duration/],
  ])("%s", async (_name, args, message) => {
    const result = await policy(args as string[]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(message as RegExp);
  });
});
