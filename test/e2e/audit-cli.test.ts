/**
 * `sandpool audit` as an operator runs it (the built CLI) against a real gateway in this
 * process: refused calls and admin changes as a table and as JSON, filtered by workspace and
 * kind; a workspace token refused (exit 1, one line); bad usage (exit 2).
 */
import { describe, expect, it } from "vitest";
import { useAdminCliHarness } from "../support/admin-cli-harness.js";
import { TEST_IMAGE } from "../support/gateway-harness.js";

const cli = useAdminCliHarness([{ name: "default", image: TEST_IMAGE, minIdle: 0, maxTotal: 2 }], ["audit"]);
const sandpool = cli.sandpool.bind(cli);

describe("sandpool audit", () => {
  it("lists a workspace's refused calls as a table and as JSON", async () => {
    const client = await cli.harness.client("cli-audited");
    expect((await client.getSession("nothing-here")).status).toBe(404);
    expect((await client.createSession({ image: "not/allowed:1" })).status).toBe(403);

    const listed = await sandpool(["--workspace", "cli-audited", "--kind", "denied"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^AT\s+KIND\s+WORKSPACE\s+WHAT\s+CODE \/ TARGET\s+WHO\s+COUNT$/m);
    const lines = listed.stdout.trim().split("\n").slice(1);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/denied\s+cli-audited\s+sessions\.create\s+policy\.image_not_allowed/);
    expect(lines[1]).toMatch(/denied\s+cli-audited\s+sessions\.get\s+session\.not_found/);

    const json = await sandpool(["--workspace", "cli-audited", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    const items = (JSON.parse(json.stdout) as { items: { code: string }[] }).items;
    expect(items.map((item) => item.code)).toEqual(["policy.image_not_allowed", "session.not_found"]);
  });

  it("lists admin changes with --kind admin", async () => {
    await cli.harness.gateway.policyRepository.put("cli-edited", { maxConcurrentSessions: 1 }, "someone");
    const listed = await sandpool(["--workspace", "cli-edited", "--kind", "admin"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/admin\s+cli-edited\s+policy\.edit\s+cli-edited\s+someone/);
    const empty = await sandpool(["--workspace", "cli-edited", "--kind", "denied"]);
    expect(empty.stdout.trim()).toBe("nothing audited in that window");
  });

  it("exits 1 with one line for a workspace token, 2 for bad usage", async () => {
    const refused = await sandpool([], await cli.harness.token("cli-nosy"));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^sandpool audit: the token is valid but is not an admin token \(403 auth\.forbidden\)/,
    );
    for (const bad of [
      ["--kind", "everything"],
      ["--limit", "0"],
      ["--since", "yesterday"],
    ]) {
      const answer = await sandpool(bad);
      expect(answer.code, `${bad.join(" ")}: ${answer.stderr}`).toBe(2);
    }
  });
});
