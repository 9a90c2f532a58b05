/**
 * Usage rolled up per UTC day, reports over the rollup and raw events, and retention
 * (src/store/sql/usage-daily-repository.ts, src/metering/usage-report.ts and
 * usage-retention.ts) on every database flavour. The rollup's progress is one row for the
 * whole database, so each test works in a later year than the one before.
 */
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { beforeAll, describe, expect, it } from "vitest";
import { UsageReports } from "../../../src/metering/usage-report.js";
import { runRetention } from "../../../src/metering/usage-retention.js";
import { allowLongStatements, UsageDailyRepository } from "../../../src/store/sql/usage-daily-repository.js";
import { type UsageEvent, UsageRepository } from "../../../src/store/sql/usage-repository.js";
import { databaseFlavours, uniqueId, useDatabase } from "./databases.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function events(workspaceId: string, day0: Date, image: string): UsageEvent[] {
  const at = (hours: number) => new Date(day0.getTime() + hours * HOUR);
  const session = `s-${randomUUID()}`;
  const common = { workspaceId, sessionId: session };
  return [
    {
      ...common,
      eventId: randomUUID(),
      kind: "session_created",
      quantity: 0,
      detail: { image },
      occurredAt: at(1),
    },
    {
      ...common,
      eventId: randomUUID(),
      kind: "exec",
      tool: "code_execution",
      quantity: 1500,
      events: 3,
      occurredAt: at(1.5),
    },
    {
      ...common,
      eventId: randomUUID(),
      kind: "exec",
      tool: "bash_code_execution",
      quantity: 250,
      occurredAt: at(2.5),
    },
    { ...common, eventId: randomUUID(), kind: "session_ended", quantity: 7_200_000, occurredAt: at(25) },
    { ...common, eventId: randomUUID(), kind: "sandbox_cpu", quantity: 4200, occurredAt: at(25) },
    {
      ...common,
      eventId: randomUUID(),
      kind: "sandbox_memory_peak",
      quantity: 50_000_000,
      occurredAt: at(25),
    },
    { ...common, eventId: randomUUID(), kind: "file_in", quantity: 100, events: 2, occurredAt: at(25.5) },
  ];
}

describe.each(databaseFlavours)("usage rollup, reports and retention on $name", (flavour) => {
  const handle = useDatabase(flavour);
  let raw: UsageRepository;
  let daily: UsageDailyRepository;
  let reports: UsageReports;
  beforeAll(() => {
    raw = new UsageRepository(handle.db);
    daily = new UsageDailyRepository(handle.db);
    reports = new UsageReports(daily);
  });

  it("reports per day and per hour, the same before and after the rollup, one workspace only", async () => {
    const day0 = new Date("2031-03-10T00:00:00Z");
    const [a, b] = [uniqueId(), uniqueId()];
    await raw.insert([...events(a, day0, "img/python:1"), ...events(b, day0, "img/other:1")]);
    const before = await reports.report(a, day0, new Date(day0.getTime() + 2 * DAY), "day");
    expect(before.buckets.map((bucket) => bucket.start)).toEqual([
      "2031-03-10T00:00:00.000Z",
      "2031-03-11T00:00:00.000Z",
    ]);
    expect(before.buckets[0]).toMatchObject({
      sessions: 1,
      execCalls: 4,
      execSeconds: 1.75,
      sandboxSeconds: 0,
      byTool: [
        { tool: "bash_code_execution", execCalls: 1, execSeconds: 0.25 },
        { tool: "code_execution", execCalls: 3, execSeconds: 1.5 },
      ],
      byImage: [{ image: "img/python:1", sessions: 1, execCalls: 4, execSeconds: 1.75 }],
    });
    expect(before.buckets[1]).toMatchObject({
      sessions: 0,
      sandboxSeconds: 7200,
      cpuSeconds: 4.2,
      memoryPeakBytes: 50_000_000,
      filesIn: 2,
      bytesIn: 100,
      byImage: [{ image: "img/python:1", sandboxSeconds: 7200, cpuSeconds: 4.2 }],
    });
    expect(before.totals).toMatchObject({ sessions: 1, execCalls: 4, sandboxSeconds: 7200 });
    // Workspace b's identical usage under another image never shows in a's report.
    expect(JSON.stringify(before)).not.toContain("img/other");

    const report = await runRetention(
      daily,
      { usageEventsDays: 3650, auditDays: 3650 },
      new Date(day0.getTime() + 3 * DAY + HOUR),
    );
    expect(report).toMatchObject({ rolledUntil: "2031-03-13T00:00:00.000Z", eventsDeleted: 0 });
    expect((await daily.rolledUntil()).toISOString()).toBe("2031-03-13T00:00:00.000Z");
    const after = await reports.report(a, day0, new Date(day0.getTime() + 2 * DAY), "day");
    expect(after).toEqual(before);
    // Rolling up again (the job runs every hour) counts nothing twice.
    await runRetention(
      daily,
      { usageEventsDays: 3650, auditDays: 3650 },
      new Date(day0.getTime() + 3 * DAY + HOUR),
    );
    expect(await reports.report(a, day0, new Date(day0.getTime() + 2 * DAY), "day")).toEqual(before);

    const hourly = await reports.report(
      a,
      new Date(day0.getTime() + 90 * 60_000),
      new Date(day0.getTime() + 3 * HOUR),
      "hour",
    );
    expect(hourly.since).toBe("2031-03-10T01:00:00.000Z");
    expect(hourly.buckets.map((bucket) => [bucket.start.slice(11, 13), bucket.execCalls])).toEqual([
      ["01", 3],
      ["02", 1],
    ]);
  });

  it("prunes raw events past retention but keeps their totals, and an open session's start", async () => {
    const day0 = new Date("2032-05-01T00:00:00Z");
    const ws = uniqueId();
    const open = { workspaceId: ws, sessionId: "still-open", eventId: randomUUID() };
    await raw.insert([
      ...events(ws, day0, "img/python:1"),
      { ...open, kind: "session_created", quantity: 0, detail: { image: "img/python:1" }, occurredAt: day0 },
    ]);
    const window = [day0, new Date(day0.getTime() + 2 * DAY)] as const;
    const before = await reports.report(ws, ...window, "day");
    const report = await runRetention(
      daily,
      { usageEventsDays: 2, auditDays: 3650 },
      new Date(day0.getTime() + 10 * DAY),
    );
    // Other tests' older events go too: the database is shared within this file.
    expect(report.eventsDeleted).toBeGreaterThanOrEqual(7);
    const { rows } = await sql<{ session_id: string }>`
      SELECT session_id FROM usage_events WHERE workspace_id = ${ws}`.execute(handle.db);
    expect(rows).toEqual([{ session_id: "still-open" }]);
    expect(await reports.report(ws, ...window, "day")).toEqual(before);
    // Hours need raw events: past retention they are empty.
    const hourly = await reports.report(ws, day0, new Date(day0.getTime() + DAY), "hour");
    expect(hourly.totals.execCalls).toBe(0);
  });

  it("counts an event that arrives after its day was rolled up", async () => {
    const day0 = new Date("2033-07-01T00:00:00Z");
    const ws = uniqueId();
    await raw.insert(events(ws, day0, "img"));
    const settings = { usageEventsDays: 30, auditDays: 3650 };
    await runRetention(daily, settings, new Date(day0.getTime() + DAY + HOUR));
    await raw.insert([
      {
        workspaceId: ws,
        sessionId: "late",
        eventId: randomUUID(),
        kind: "exec",
        tool: "code_execution",
        quantity: 1000,
        occurredAt: new Date(day0.getTime() + 12 * HOUR),
      },
    ]);
    await runRetention(daily, settings, new Date(day0.getTime() + DAY + 2 * HOUR));
    const report = await reports.report(ws, day0, new Date(day0.getTime() + DAY), "day");
    expect(report.totals.execCalls).toBe(5);
  });

  it("indexes usage_events by occurred_at alone (min, each day's rollup and pruning read by time)", async () => {
    const { rows } = await sql<{ indexdef: string }>`
      SELECT indexdef FROM pg_indexes WHERE tablename = 'usage_events' AND indexname = 'usage_events_occurred_at'`.execute(
      handle.db,
    );
    expect(rows[0]?.indexdef).toMatch(/\(occurred_at\)$/);
  });

  it("lifts the statement timeout for a rollup or prune transaction only", async () => {
    const inside = await handle.db.transaction().execute(async (tx) => {
      await allowLongStatements(tx);
      return (await sql<{ statement_timeout: string }>`SHOW statement_timeout`.execute(tx)).rows[0]
        ?.statement_timeout;
    });
    expect(inside).toBe("5min");
    const after = (await sql<{ statement_timeout: string }>`SHOW statement_timeout`.execute(handle.db))
      .rows[0];
    expect(after?.statement_timeout).not.toBe("5min");
  });

  it("rolls up day by day, and two runs over the same days at once neither fail nor count twice", async () => {
    const day0 = new Date("2034-02-01T00:00:00Z");
    const ws = uniqueId();
    await raw.insert([...events(ws, day0, "img"), ...events(ws, new Date(day0.getTime() + 2 * DAY), "img")]);
    const to = new Date(day0.getTime() + 4 * DAY);
    await Promise.all([daily.rollUp(day0, to), daily.rollUp(day0, to), daily.rollUp(day0, to)]);
    expect((await daily.rolledUntil()).toISOString()).toBe("2034-02-05T00:00:00.000Z");
    const rows = await daily.dailyRows(ws, day0, to);
    const execCalls = rows.filter((row) => row.kind === "exec").reduce((sum, row) => sum + row.events, 0);
    expect(execCalls).toBe(8);
    // One row per day, kind, tool and image: the days the sessions touched, 0, 1, 2 and 3.
    expect(new Set(rows.map((row) => row.start.toISOString())).size).toBe(4);
  });

  it("prunes an ended session's session_created even when a batch took its session_ended first", async () => {
    const day0 = new Date("2035-04-01T00:00:00Z");
    const ws = uniqueId();
    const common = { workspaceId: ws, sessionId: `s-${randomUUID()}` };
    const at = (hours: number) => new Date(day0.getTime() + hours * HOUR);
    // session_ended stored first, so a one-row batch taking rows as stored meets it first.
    await raw.insert([
      { ...common, eventId: randomUUID(), kind: "session_ended", quantity: 1000, occurredAt: at(3) },
    ]);
    await raw.insert([
      { ...common, eventId: randomUUID(), kind: "session_created", quantity: 0, occurredAt: at(1) },
      {
        ...common,
        eventId: randomUUID(),
        kind: "exec",
        tool: "code_execution",
        quantity: 5,
        occurredAt: at(2),
      },
    ]);
    // A session that ends after the cutoff keeps its start (a later day's rollup reads its image).
    const later = { workspaceId: ws, sessionId: "ends-later" };
    await raw.insert([
      { ...later, eventId: randomUUID(), kind: "session_created", quantity: 0, occurredAt: at(4) },
      { ...later, eventId: randomUUID(), kind: "session_ended", quantity: 1000, occurredAt: at(30) },
    ]);
    const cutoff = new Date(day0.getTime() + DAY);
    await daily.rollUp(day0, new Date(day0.getTime() + 2 * DAY));
    expect(await daily.pruneEvents(cutoff, 1)).toBeGreaterThanOrEqual(3);
    const { rows } = await sql<{ session_id: string; kind: string }>`
      SELECT session_id, kind FROM usage_events WHERE workspace_id = ${ws} ORDER BY occurred_at`.execute(
      handle.db,
    );
    expect(rows).toEqual([
      { session_id: "ends-later", kind: "session_created" },
      { session_id: "ends-later", kind: "session_ended" },
    ]);
  });

  it("deletes audit rows older than auditDays and keeps newer ones", async () => {
    const ws = uniqueId();
    const now = new Date();
    for (const at of [new Date(now.getTime() - 40 * DAY), new Date(now.getTime() - 5 * DAY)])
      await sql`INSERT INTO policy_audit (workspace_id, actor, at) VALUES (${ws}, 'test', ${at})`.execute(
        handle.db,
      );
    await sql`INSERT INTO admin_audit (actor, at, action, target) VALUES ('test', ${new Date(now.getTime() - 40 * DAY)}, 'x', ${ws})`.execute(
      handle.db,
    );
    await runRetention(daily, { usageEventsDays: 3650, auditDays: 30 }, now);
    const kept = await sql<{
      n: string | number;
    }>`SELECT count(*) AS n FROM policy_audit WHERE workspace_id = ${ws}`.execute(handle.db);
    expect(Number(kept.rows[0]!.n)).toBe(1);
    const admin = await sql<{
      n: string | number;
    }>`SELECT count(*) AS n FROM admin_audit WHERE target = ${ws}`.execute(handle.db);
    expect(Number(admin.rows[0]!.n)).toBe(0);
  });
});
