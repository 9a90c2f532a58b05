import { sql } from "kysely";
import { beforeAll, describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { PolicyRepository } from "../../../src/store/sql/policy-repository.js";
import { databaseFlavours, uniqueId, useDatabase } from "./databases.js";

const unset = {
  enabled: true,
  allowedImages: null,
  defaultImage: null,
  allowedTools: null,
  execTimeoutCeilingSeconds: null,
  idleTimeoutCeilingSeconds: null,
  maxLifetimeCeilingSeconds: null,
  maxConcurrentSessions: null,
  sessionsPerMinute: null,
  execSecondsPerDay: null,
  maxFileBytes: null,
  resourceClass: null,
  isolation: null,
  egressAllowed: null,
  egressAllowCidrs: null,
  egressAllowHosts: null,
  sandboxReuse: null,
  hibernateAfterIdleSeconds: null,
  maxHibernatedSessions: null,
};

describe.each(databaseFlavours)("PolicyRepository on $name", (flavour) => {
  const handle = useDatabase(flavour);
  let policies: PolicyRepository;
  beforeAll(() => {
    policies = new PolicyRepository(handle.db);
  });

  it("has no row for a workspace never configured", async () => {
    expect(await policies.get(uniqueId())).toBeUndefined();
    expect(await policies.audit(uniqueId())).toEqual([]);
  });

  it("stores the egress allow-lists and clears them with null", async () => {
    const ws = uniqueId();
    const lists = {
      egressAllowCidrs: ["10.1.0.0/16", "fd00::/8"],
      egressAllowHosts: ["pypi.org", "*.pythonhosted.org"],
    };
    expect(await policies.put(ws, lists, "alice")).toMatchObject(lists);
    expect(await policies.get(ws)).toMatchObject(lists);
    await policies.put(ws, { egressAllowHosts: [] }, "alice");
    expect(await policies.get(ws)).toMatchObject({
      egressAllowCidrs: lists.egressAllowCidrs,
      egressAllowHosts: [],
    });
    await policies.put(ws, { egressAllowCidrs: null, egressAllowHosts: null }, "alice");
    expect(await policies.get(ws)).toMatchObject({ egressAllowCidrs: null, egressAllowHosts: null });
    const [latest] = await policies.audit(ws);
    expect(latest?.before).toMatchObject({ egressAllowCidrs: lists.egressAllowCidrs, egressAllowHosts: [] });
  });

  it("creates a row at version 1 and audits it with no before", async () => {
    const ws = uniqueId();
    const row = await policies.put(
      ws,
      { maxConcurrentSessions: 3, allowedTools: ["bash_code_execution"] },
      "alice",
    );
    expect(row).toEqual({
      ...unset,
      workspaceId: ws,
      maxConcurrentSessions: 3,
      allowedTools: ["bash_code_execution"],
      version: 1,
      updatedAt: expect.any(Date),
      updatedBy: "alice",
    });
    expect(await policies.get(ws)).toEqual(row);
    const [entry, ...rest] = await policies.audit(ws);
    expect(rest).toEqual([]);
    expect(entry).toMatchObject({ workspaceId: ws, actor: "alice", before: null, at: expect.any(Date) });
    expect(entry?.after).toEqual({
      ...unset,
      maxConcurrentSessions: 3,
      allowedTools: ["bash_code_execution"],
      version: 1,
    });
  });

  it("edits only the fields given, clears a field set to null, bumps the version and audits before/after", async () => {
    const ws = uniqueId();
    await policies.put(ws, { maxFileBytes: 5_000_000_000, resourceClass: "small", enabled: false }, "alice");
    const edited = await policies.put(ws, { maxFileBytes: null, allowedImages: ["python:3.12"] }, "bob");
    expect(edited).toMatchObject({
      maxFileBytes: null,
      allowedImages: ["python:3.12"],
      resourceClass: "small",
      enabled: false,
      version: 2,
      updatedBy: "bob",
    });
    const [latest, first] = await policies.audit(ws);
    expect(latest).toMatchObject({ actor: "bob" });
    expect(latest?.before).toEqual({
      ...unset,
      maxFileBytes: 5_000_000_000,
      resourceClass: "small",
      enabled: false,
      version: 1,
    });
    expect(latest?.after).toEqual({
      ...unset,
      allowedImages: ["python:3.12"],
      resourceClass: "small",
      enabled: false,
      version: 2,
    });
    expect(first?.after).toEqual(latest?.before);
    expect(await policies.audit(ws, 1)).toHaveLength(1);
  });

  it("lists every row ordered by workspace", async () => {
    const prefix = uniqueId("list");
    for (const suffix of ["b", "a", "c"])
      await policies.put(`${prefix}-${suffix}`, { sessionsPerMinute: 10 }, "alice");
    const listed = (await policies.list()).filter((row) => row.workspaceId.startsWith(prefix));
    expect(listed.map((row) => row.workspaceId)).toEqual(["a", "b", "c"].map((s) => `${prefix}-${s}`));
    expect(listed.every((row) => row.sessionsPerMinute === 10)).toBe(true);
  });

  it("deletes with an audit row whose after is null, and reports a missing row", async () => {
    const ws = uniqueId();
    await policies.put(ws, { egressAllowed: false }, "alice");
    expect(await policies.delete(ws, "carol")).toBe(true);
    expect(await policies.get(ws)).toBeUndefined();
    const [removal] = await policies.audit(ws);
    expect(removal).toMatchObject({ actor: "carol", after: null });
    expect(removal?.before).toEqual({ ...unset, egressAllowed: false, version: 1 });
    expect(await policies.delete(ws, "carol")).toBe(false);
    expect(await policies.audit(ws)).toHaveLength(2);
  });

  it("keeps one workspace's audit trail out of another's", async () => {
    const a = uniqueId();
    const b = uniqueId();
    await policies.put(a, { sessionsPerMinute: 1 }, "alice");
    await policies.put(b, { sessionsPerMinute: 2 }, "bob");
    expect((await policies.audit(a)).map((entry) => entry.workspaceId)).toEqual([a]);
  });

  it.each([
    [{ maxConcurrentSessions: 0 }],
    [{ execSecondsPerDay: -5 }],
    [{ sessionsPerMinute: 1.5 }],
    [{ allowedTools: ["rm_rf"] }],
    [{ noSuchField: 1 }],
  ])("refuses a malformed edit %j and writes nothing", async (fields) => {
    const ws = uniqueId();
    const attempt = policies.put(ws, fields as never, "alice");
    await expect(attempt).rejects.toBeInstanceOf(SandpoolError);
    await expect(attempt).rejects.toMatchObject({ code: "request.malformed" });
    expect(await policies.get(ws)).toBeUndefined();
    expect(await policies.audit(ws)).toEqual([]);
  });

  it("rolls the edit back when its audit row cannot be written", async () => {
    const ws = uniqueId();
    await policies.put(ws, { sessionsPerMinute: 5 }, "alice");
    // NOT VALID leaves old rows alone but checks every new one: the next audit insert fails.
    await sql`alter table policy_audit add constraint refuse_all check (false) not valid`.execute(handle.db);
    try {
      await expect(policies.put(ws, { sessionsPerMinute: 6 }, "mallory")).rejects.toThrow(/refuse_all/);
      await expect(policies.delete(ws, "mallory")).rejects.toThrow(/refuse_all/);
    } finally {
      await sql`alter table policy_audit drop constraint refuse_all`.execute(handle.db);
    }
    expect(await policies.get(ws)).toMatchObject({ sessionsPerMinute: 5, version: 1, updatedBy: "alice" });
    expect(await policies.audit(ws)).toHaveLength(1);
  });

  it("serialises concurrent first edits: one creates, the other edits, both audited", async () => {
    const ws = uniqueId();
    const rows = await Promise.all([
      policies.put(ws, { sessionsPerMinute: 7 }, "alice"),
      policies.put(ws, { maxConcurrentSessions: 2 }, "bob"),
    ]);
    expect(rows.map((row) => row.version).sort()).toEqual([1, 2]);
    expect(await policies.get(ws)).toMatchObject({
      sessionsPerMinute: 7,
      maxConcurrentSessions: 2,
      version: 2,
    });
    const [second, first] = await policies.audit(ws);
    expect(first?.before).toBeNull();
    expect(second?.before).toEqual(first?.after);
  });

  it("edits a row another writer created after its first look, auditing that row as before", async () => {
    const ws = uniqueId();
    const other = await handle.db.startTransaction().execute();
    await other
      .insertInto("workspace_policies")
      .values({ workspace_id: ws, sessions_per_minute: 9, updated_by: "other" })
      .execute();
    const put = policies.put(ws, { maxConcurrentSessions: 4 }, "alice");
    if (flavour.name === "postgres") await waitForLockWaiter();
    await other.commit().execute();
    expect(await put).toMatchObject({ sessionsPerMinute: 9, maxConcurrentSessions: 4, version: 2 });
    const [entry] = await policies.audit(ws);
    expect(entry?.before).toMatchObject({ sessionsPerMinute: 9, maxConcurrentSessions: null, version: 1 });
  });

  /** Until the put is blocked on the uncommitted insert, i.e. inside its race path. */
  async function waitForLockWaiter(): Promise<void> {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const { rows } = await sql<{ n: string }>`select count(*) as n from pg_locks where not granted`.execute(
        handle.db,
      );
      if (Number(rows[0]?.n) > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error("the put never waited for the other writer");
  }
});

describe.each(databaseFlavours)("schema CHECK constraints on $name", (flavour) => {
  const handle = useDatabase(flavour);

  const limits = [
    "exec_timeout_ceiling_s",
    "idle_timeout_ceiling_s",
    "max_lifetime_ceiling_s",
    "max_concurrent_sessions",
    "sessions_per_minute",
    "exec_seconds_per_day",
    "max_file_bytes",
  ] as const;

  it.each(limits.flatMap((column) => [0, -1].map((value) => [column, value] as const)))(
    "refuses %s = %d in workspace_policies",
    async (column, value) => {
      const insert = handle.db
        .insertInto("workspace_policies")
        .values({ workspace_id: uniqueId(), updated_by: "test", [column]: value })
        .execute();
      await expect(insert).rejects.toMatchObject({ code: "23514" });
    },
  );

  it("accepts 1 for every limit", async () => {
    const ones = Object.fromEntries(limits.map((column) => [column, 1]));
    await handle.db
      .insertInto("workspace_policies")
      .values({ workspace_id: uniqueId(), updated_by: "test", ...ones })
      .execute();
  });

  it("refuses an empty workspace id, an unknown usage kind and a negative quantity", async () => {
    await expect(
      handle.db.insertInto("workspace_policies").values({ workspace_id: "", updated_by: "test" }).execute(),
    ).rejects.toMatchObject({ code: "23514" });
    const event = {
      event_id: crypto.randomUUID(),
      workspace_id: "ws",
      session_id: "s",
      occurred_at: new Date(),
    };
    await expect(
      handle.db
        .insertInto("usage_events")
        .values({ ...event, kind: "mystery", quantity: 0 })
        .execute(),
    ).rejects.toMatchObject({ code: "23514" });
    await expect(
      handle.db
        .insertInto("usage_events")
        .values({ ...event, kind: "exec", quantity: -1 })
        .execute(),
    ).rejects.toMatchObject({ code: "23514" });
  });
});
