/**
 * `sandpool sessions` and `sandpool pools` as an operator runs them (the built CLI), against a
 * real gateway in this process (the test harness: process runtime, memory store, PGlite):
 * tables for people and --json for programs, ending a session, resizing a pool, the gateway's
 * refusals (unknown session or pool, invalid sizes, a workspace token) as one-line reasons
 * with exit code 1, and bad usage with exit code 2. Needs `npm run build` first.
 */
import { describe, expect, it } from "vitest";
import { useAdminCliHarness } from "../support/admin-cli-harness.js";
import { TEST_IMAGE } from "../support/gateway-harness.js";

const cli = useAdminCliHarness([{ name: "default", image: TEST_IMAGE, minIdle: 1, maxTotal: 5 }]);
const sandpool = cli.sandpool.bind(cli);

async function openSession(workspace: string): Promise<string> {
  const answer = await (await cli.harness.client(workspace)).createSession({});
  expect(answer.status, answer.text).toBe(201);
  return (answer.body as { session_id: string }).session_id;
}

describe("sandpool sessions", () => {
  it("lists running sessions as a table and as JSON, one workspace's or all", async () => {
    const a = await openSession("cli-team-a");
    const b = await openSession("cli-team-b");

    const all = await sandpool(["sessions", "list"]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toMatch(
      /^ID\s+WORKSPACE\s+STATE\s+IMAGE\s+POOL\s+CREATED\s+LAST ACTIVITY\s+IN_FLIGHT\s+EXPIRES$/m,
    );
    // Calls in flight now, not calls made: a session between calls shows 0.
    expect(all.stdout).toMatch(new RegExp(`^${a}\\s.*\\s0\\s+\\S+$`, "m"));
    expect(all.stdout).toContain(a);
    expect(all.stdout).toContain(b);

    const mine = await sandpool(["sessions", "list", "--workspace", "cli-team-a", "--json"]);
    expect(mine.code, mine.stderr).toBe(0);
    const items = (JSON.parse(mine.stdout) as { items: { id: string; workspace: string }[] }).items;
    expect(items.map((item) => item.id)).toEqual([a]);
    expect(items[0]).toMatchObject({
      workspace: "cli-team-a",
      image: TEST_IMAGE,
      pool: "default",
      state: "running",
    });

    const none = await sandpool(["sessions", "list", "--workspace", "cli-team-nobody"]);
    expect(none.stdout.trim()).toBe("no session of cli-team-nobody is running");

    for (const id of [a, b]) expect((await sandpool(["sessions", "end", id])).code).toBe(0);
  });

  it("hibernate says why it cannot where the runtime cannot checkpoint (dev's processes), and the session runs on", async () => {
    const id = await openSession("cli-team-hib");
    const refused = await sandpool(["sessions", "hibernate", id]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/409 session\.not_hibernatable/);
    expect((await (await cli.harness.client("cli-team-hib")).getSession(id)).status).toBe(200);
    const unknown = await sandpool(["sessions", "hibernate", "no-such-session"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/404 session\.not_found/);
    expect((await sandpool(["sessions", "end", id])).code).toBe(0);
  });

  it("ends a session: the client finds it gone", async () => {
    const id = await openSession("cli-team-end");
    const ended = await sandpool(["sessions", "end", id, "--workspace", "cli-team-end"]);
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stdout.trim()).toBe(
      `ended session ${id} of cli-team-end (image ${TEST_IMAGE}, pool default)`,
    );
    expect((await (await cli.harness.client("cli-team-end")).getSession(id)).status).toBe(404);

    const again = await sandpool(["sessions", "end", id]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toMatch(/^sandpool sessions: .*404 session\.not_found/);
  });

  it("exits 2 on bad usage, 1 for a workspace token", async () => {
    const bad = await sandpool(["sessions", "list", "--workspace", "../etc"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/not a valid workspace id/);
    const missing = await sandpool(["sessions", "end"]);
    expect(missing.code).toBe(2);

    const refused = await sandpool(["sessions", "list"], await cli.harness.token("cli-team-a"));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^sandpool sessions: the token is valid but is not an admin token \(403 auth\.forbidden\)/,
    );
  });
});

describe("sandpool pools", () => {
  it("lists pools as a table and as JSON", async () => {
    const table = await sandpool(["pools", "list"]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(
      /^POOL\s+IMAGE\s+CLASS\s+MIN IDLE\s+EFFECTIVE\s+MAX TOTAL\s+IDLE\s+PARKED\s+LEASED\s+STARTING\s+FAILURES\s+WARM HITS\s+STARTS\/S$/m,
    );
    expect(table.stdout).toMatch(
      /^This replica, last hour: \d+ contract calls, \d+ server errors \(5xx\), \d+ of them sandbox failures/m,
    );
    const json = await sandpool(["pools", "list", "--json"]);
    const items = (
      JSON.parse(json.stdout) as {
        items: { name: string; minIdle: number; maxTotal: number; effectiveMinIdle: number }[];
      }
    ).items;
    expect(items).toEqual([
      expect.objectContaining({ name: "default", minIdle: 1, maxTotal: 5, lastStartError: null }),
    ]);
    // The effective minimum beside the configured one, in the table as in the JSON.
    const effective = items[0]!.effectiveMinIdle;
    expect(effective).toBeGreaterThanOrEqual(1);
    expect(table.stdout).toMatch(
      new RegExp(
        `^default\\s+${TEST_IMAGE.replace(/[.]/g, "\\.")}\\s+standard\\s+1\\s+${effective}\\s+5\\s`,
        "m",
      ),
    );
    expect(table.stdout).toContain("EFFECTIVE is what warm-up keeps idle");
  });

  it("resizes a pool, shows the configured size beside the new one, and resets it", async () => {
    const resized = await sandpool(["pools", "resize", "default", "--min-idle", "2", "--max-total", "4"]);
    expect(resized.code, resized.stderr).toBe(0);
    expect(resized.stdout).toContain("resized the default pool: minIdle 2, maxTotal 4");
    expect(resized.stdout).toMatch(/^default\s+\S+\s+standard\s+2 \(1\)\s+\d+\s+4 \(5\)\s/m);
    expect(cli.harness.gateway.services.pools.sizeOf(cli.harness.gateway.services.pools.list()[0]!)).toEqual({
      minIdle: 2,
      maxTotal: 4,
    });

    const reset = await sandpool([
      "pools",
      "resize",
      "default",
      "--min-idle",
      "default",
      "--max-total",
      "default",
      "--json",
    ]);
    expect(reset.code, reset.stderr).toBe(0);
    expect(JSON.parse(reset.stdout)).toMatchObject({ minIdle: 1, maxTotal: 5 });
  });

  it("explains the gateway's refusals and bad usage", async () => {
    const unknown = await sandpool(["pools", "resize", "no-such-pool", "--min-idle", "1"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/404 request\.not_found: no pool named 'no-such-pool'/);

    // Valid on its own, refused by the gateway: minIdle above the configured maxTotal.
    const tooMany = await sandpool(["pools", "resize", "default", "--min-idle", "6"]);
    expect(tooMany.code).toBe(1);
    expect(tooMany.stderr).toMatch(/422 request\.malformed/);
    expect(tooMany.stderr).toMatch(/minIdle \(6\) cannot exceed maxTotal \(5\)/);

    for (const args of [
      ["pools", "resize", "default"],
      ["pools", "resize", "default", "--max-total", "0"],
      ["pools", "resize", "default", "--min-idle", "many"],
      ["pools", "resize", "default", "--min-idle", "1001"],
    ]) {
      const bad = await sandpool(args);
      expect(bad.code, args.join(" ")).toBe(2);
    }

    const refused = await sandpool(
      ["pools", "resize", "default", "--min-idle", "3"],
      await cli.harness.token("cli-team-a"),
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/403 auth\.forbidden/);
    expect(
      cli.harness.gateway.services.pools.sizeOf(cli.harness.gateway.services.pools.list()[0]!).minIdle,
    ).toBe(1);
  });
});
