/**
 * `sandpool explain` as an operator runs it (the built CLI) against a real gateway in this
 * process: an allowed CreateSession and a refused one as a readable trace and as JSON, a
 * call on an unknown session, a token read from --token-file checked (never echoed), and its
 * refusals: a workspace token (exit 1, one line) and bad usage (exit 2).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { mintToken } from "../../src/auth/dev-keys.js";
import { HERMETIC_CLI_ENV, useAdminCliHarness } from "../support/admin-cli-harness.js";
import { runCli } from "../support/cli.js";
import { TEST_IMAGE, TEST_SECRET } from "../support/gateway-harness.js";

const cli = useAdminCliHarness(
  [{ name: "default", image: TEST_IMAGE, minIdle: 0, maxTotal: 2 }],
  ["explain"],
);
const sandpool = cli.sandpool.bind(cli);

describe("sandpool explain", () => {
  it("prints an allowed CreateSession's trace and the limits in force", async () => {
    const answer = await sandpool(["--workspace", "cli-explained", "--operation", "sessions.create"]);
    expect(answer.code, answer.stderr).toBe(0);
    expect(answer.stdout).toMatch(/^sessions\.create for workspace cli-explained: ALLOW\n/);
    expect(answer.stdout).toMatch(/^STEP\s+VERDICT\s+RULE\s+FIELD\s+VALUE\s+LIMIT\s+DETAIL$/m);
    expect(answer.stdout).toMatch(/^policy\s+pass\s+image\.default\s+defaultImage\s+sandpool\/sandbox:dev/m);
    // minIdle 0: nothing idle, room below maxTotal.
    expect(answer.stdout).toMatch(/^admit\s+pass\s+pool\.capacity\s+-\s+0\s+2\s+.*a cold start$/m);
    expect(answer.stdout).toMatch(/^image\s+sandpool\/sandbox:dev$/m);
    // Explain leased nothing, so nothing was started.
    expect(await cli.harness.store.countMembers("default", Date.now())).toBe(0);
  });

  it("prints a refusal with its status and code; --json prints the admin API's answer", async () => {
    const args = ["--workspace", "cli-refused", "--operation", "sessions.create", "--image", "not/allowed:1"];
    const answer = await sandpool(args);
    expect(answer.code, answer.stderr).toBe(0);
    expect(answer.stdout).toMatch(/: DENY \(403 policy\.image_not_allowed\)\n/);
    expect(answer.stdout).toMatch(
      /^policy\s+deny policy\.image_not_allowed\s+image\.allowed\s+allowedImages/m,
    );
    const json = await sandpool([...args, "--json"]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      workspace: "cli-refused",
      operation: "sessions.create",
      decision: "deny",
      code: "policy.image_not_allowed",
    });
  });

  it("still takes --op, the earlier spelling of --operation, for scripts written with it", async () => {
    const answer = await sandpool(["--workspace", "cli-explained", "--op", "sessions.create", "--json"]);
    expect(answer.code, answer.stderr).toBe(0);
    expect(JSON.parse(answer.stdout)).toMatchObject({ operation: "sessions.create", decision: "allow" });
  });

  it("explains a call on an unknown session as session.not_found, with --args and --session", async () => {
    const answer = await sandpool([
      "--workspace",
      "cli-refused",
      "--op",
      "sessions.exec",
      "--session",
      "no-such-session",
      "--args",
      '{"tool":"bash_code_execution","input":{"command":"ls"}}',
      "--json",
    ]);
    expect(answer.code, answer.stderr).toBe(0);
    expect(JSON.parse(answer.stdout)).toMatchObject({ decision: "deny", code: "session.not_found" });
  });

  it("checks a token read from --token-file: its workspace, or why it is refused; never printed", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "sandpool-explain-token-"));
    try {
      const file = path.join(dir, "token");
      const token = await cli.harness.token("cli-token-owner");
      await writeFile(file, `${token}\n`);
      const args = ["--workspace", "cli-asked", "--operation", "sessions.create", "--token-file", file];
      const answer = await sandpool(args);
      expect(answer.code, answer.stderr).toBe(0);
      expect(answer.stdout).toMatch(
        /^sessions\.create for workspace cli-token-owner: ALLOW\ntoken: valid, of workspace cli-token-owner/,
      );
      expect(answer.stdout).toMatch(/^token\s+pass\s+auth\.bearer\s.*not a token of 'cli-asked'/m);
      expect(answer.stdout).not.toContain(token);

      const expired = await mintToken({ secret: TEST_SECRET, workspace: "cli-asked", ttlSeconds: -60 });
      await writeFile(file, expired);
      const refused = await sandpool([...args, "--json"]);
      expect(refused.code, refused.stderr).toBe(0);
      expect(JSON.parse(refused.stdout)).toMatchObject({
        workspace: "cli-asked",
        decision: "deny",
        code: "auth.expired",
        token: { valid: false, reason: "expired" },
      });
      expect(refused.stdout).not.toContain(expired);

      const missing = await sandpool([...args.slice(0, -1), path.join(dir, "absent")]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/cannot read --token-file .*absent: ENOENT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("exits 1 with one line for a workspace token, 2 for bad usage", async () => {
    const refused = await sandpool(
      ["--workspace", "cli-nosy", "--op", "sessions.create"],
      await cli.harness.token("cli-nosy"),
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^sandpool explain: the token is valid but is not an admin token/);
    const expired = await sandpool(
      ["--workspace", "cli-nosy", "--operation", "sessions.create"],
      await mintToken({ secret: TEST_SECRET, admin: true, ttlSeconds: -600 }),
    );
    expect(expired.code).toBe(1);
    expect(expired.stderr).toMatch(
      /^sandpool explain: the admin token has expired \(401 auth\.expired\): the bearer token expired at .*\n.*sandpool token --admin/,
    );
    for (const bad of [
      ["--operation", "sessions.create"],
      ["--workspace", "w"],
      ["--workspace", "w", "--operation", "admin.explain"],
      ["--workspace", "w", "--op", "admin.explain"],
      ["--workspace", "w", "--operation", "sessions.create", "--op", "sessions.get"],
      ["--workspace", "-w", "--op", "sessions.create"],
      ["--workspace", "w", "--op", "sessions.create", "--args", "{not json"],
      ["--workspace", "w", "--op", "sessions.create", "--args", "[1]"],
    ]) {
      const answer = await sandpool(bad);
      expect(answer.code, `${bad.join(" ")}: ${answer.stderr}`).toBe(2);
      expect(answer.stderr).toMatch(/--help/);
    }
    const unnamed = await sandpool(["--workspace", "w"]);
    expect(unnamed.stderr).toMatch(/--operation OPERATION \(one of sessions\.create, /);
  });

  it("--help says what it does, what --args holds, and gives examples", async () => {
    const help = await runCli(["explain", "--help"], { env: HERMETIC_CLI_ENV, timeoutMs: 30_000 });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Nothing\s+runs/);
    expect(help.stdout).toMatch(/--args <json>/);
    expect(help.stdout).toMatch(/--operation <operation>\s+the contract operation \(the API's `operation`\)/);
    expect(help.stdout).toMatch(
      /Examples:\n\s+sandpool explain --workspace team-a --operation sessions\.create\n/,
    );
  });
});
