import type { Logger } from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BufferedUsageSink, type UsageWriter } from "../../../src/metering/buffered-usage-sink.js";
import type { UsageEventInput } from "../../../src/metering/usage-sink.js";
import { type UsageEvent, usageEventSchema } from "../../../src/store/sql/usage-event.js";

const BATCH = 500;
const BOUND = 100_000;

function fakeLog() {
  const log = { error: vi.fn(), warn: vi.fn(), info: vi.fn(), debug: vi.fn() };
  return { log, logger: log as unknown as Logger };
}

/**
 * A writer like the repository: validates, stores each event id once, and can be told to
 * fail the next calls or to hold a call until released.
 */
function fakeWriter({ validate = true } = {}) {
  const stored = new Map<string, UsageEvent>();
  const calls: UsageEvent[][] = [];
  let failures = 0;
  let hold: Promise<void> | undefined;
  const writer: UsageWriter = {
    async insert(events) {
      calls.push([...events]);
      if (hold) await hold;
      if (failures > 0) {
        failures--;
        throw new Error("database unavailable");
      }
      if (validate) usageEventSchema.array().parse(events);
      let inserted = 0;
      for (const event of events) {
        if (stored.has(event.eventId)) continue;
        stored.set(event.eventId, event);
        inserted++;
      }
      return inserted;
    },
  };
  return {
    writer,
    stored,
    calls,
    failNext: (n = 1) => {
      failures = n;
    },
    holdCalls: () => {
      let release!: () => void;
      hold = new Promise((resolve) => {
        release = resolve;
      });
      return () => {
        hold = undefined;
        release();
      };
    },
  };
}

const event = (i: number, overrides: Partial<UsageEventInput> = {}): UsageEventInput => ({
  workspace: "ws",
  sessionId: `s-${i}`,
  kind: "exec",
  tool: "code_execution",
  quantity: i,
  ...overrides,
});

async function settle() {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

describe("BufferedUsageSink", () => {
  let sinks: BufferedUsageSink[] = [];
  const open = (writer: UsageWriter, logger: Logger, flushEveryMs?: number) => {
    const sink = new BufferedUsageSink(writer, logger, flushEveryMs);
    sinks.push(sink);
    return sink;
  };

  beforeEach(() => {
    vi.useFakeTimers({ now: new Date("2030-01-15T12:00:00Z") });
  });
  afterEach(async () => {
    for (const sink of sinks) await sink.close().catch(() => undefined);
    sinks = [];
    vi.useRealTimers();
  });

  it("turns each input into a stored event with its own id, its time and clean values", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger);
    sink.record({ workspace: "ws", sessionId: "s1", kind: "session_created", detail: { warm: true } });
    sink.record({
      workspace: "ws",
      sessionId: "s1",
      kind: "exec",
      tool: "bash_code_execution",
      quantity: 12.6,
    });
    sink.record({ workspace: "ws", sessionId: "s1", kind: "file_in", quantity: -5 });
    await sink.flush();
    const [created, exec, fileIn] = [...db.stored.values()];
    expect(created).toMatchObject({
      workspaceId: "ws",
      sessionId: "s1",
      kind: "session_created",
      tool: null,
      quantity: 0,
      detail: { warm: true },
      occurredAt: new Date("2030-01-15T12:00:00Z"),
    });
    expect(exec).toMatchObject({ kind: "exec", tool: "bash_code_execution", quantity: 13, detail: null });
    expect(fileIn).toMatchObject({ quantity: 0 });
    expect(new Set([created!.eventId, exec!.eventId, fileIn!.eventId]).size).toBe(3);
  });

  it("keeps events in memory until a flush", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger, 1_000);
    sink.record(event(1));
    await settle();
    expect(db.calls).toHaveLength(0);
    await sink.flush();
    expect(db.calls).toHaveLength(1);
  });

  it("flushes on its timer", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger, 1_000);
    sink.record(event(1));
    sink.record(event(2));
    await vi.advanceTimersByTimeAsync(999);
    expect(db.calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(db.calls).toHaveLength(1);
    expect(db.stored.size).toBe(2);
  });

  it("writes in batches of 500, in order", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger, 60_000);
    const release = db.holdCalls(); // keep the flush a full batch triggers from finishing early
    for (let i = 0; i < 1_200; i++) sink.record(event(i));
    release();
    await sink.flush();
    expect(db.calls.map((batch) => batch.length)).toEqual([500, 500, 200]);
    expect([...db.stored.values()].map((e) => e.quantity)).toEqual(
      Array.from({ length: 1_200 }, (_, i) => i),
    );
  });

  it("starts a flush as soon as a batch fills, without waiting for the timer", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger, 60_000);
    for (let i = 0; i < BATCH - 1; i++) sink.record(event(i));
    await settle();
    expect(db.calls).toHaveLength(0);
    sink.record(event(BATCH));
    await settle();
    expect(db.calls).toHaveLength(1);
    expect(db.stored.size).toBe(BATCH);
  });

  it("concurrent flushes share one write", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger);
    sink.record(event(1));
    const release = db.holdCalls();
    const first = sink.flush();
    const second = sink.flush();
    expect(second).toBe(first);
    release();
    await Promise.all([first, second]);
    expect(db.calls).toHaveLength(1);
  });

  it("a failed write keeps the events (with their ids) for the next flush, and warns", async () => {
    const db = fakeWriter();
    const { log, logger } = fakeLog();
    const sink = open(db.writer, logger, 60_000);
    sink.record(event(1));
    sink.record(event(2));
    db.failNext();
    await sink.flush(); // does not throw: requests are never slowed by metering
    expect(db.stored.size).toBe(0);
    expect(log.warn).toHaveBeenCalledTimes(1);
    await sink.flush();
    expect(db.stored.size).toBe(2);
    const [failedBatch, retriedBatch] = db.calls;
    expect(retriedBatch!.map((e) => e.eventId)).toEqual(failedBatch!.map((e) => e.eventId));
  });

  it("retries only what was not written: earlier batches are not sent again", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger, 60_000);
    // Batch 1 succeeds, batch 2 fails, everything after succeeds.
    const original = db.writer.insert.bind(db.writer);
    let call = 0;
    db.writer.insert = async (events) => {
      call++;
      if (call === 2) {
        db.calls.push([...events]);
        throw new Error("connection reset");
      }
      return original(events);
    };
    for (let i = 0; i < 1_100; i++) sink.record(event(i));
    await sink.flush();
    expect(db.stored.size).toBe(500);
    await sink.flush();
    expect(db.stored.size).toBe(1_100);
    const sent = db.calls.flat().map((e) => e.eventId);
    // Every event reached the writer; only the failed batch's 500 were sent twice.
    expect(new Set(sent).size).toBe(1_100);
    expect(sent.length).toBe(1_100 + 500);
  });

  it("events recorded during a flush are written by it too", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger, 60_000);
    sink.record(event(1));
    const release = db.holdCalls();
    const flushing = sink.flush();
    sink.record(event(2));
    release();
    await flushing;
    expect(db.stored.size).toBe(2);
  });

  it("close() stops the timer and writes what is left", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger, 1_000);
    sink.record(event(1));
    await sink.close();
    expect(db.stored.size).toBe(1);
    sink.record(event(2));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(db.stored.size).toBe(1);
  });

  it("never drops a billing event while the database is away, however many wait", async () => {
    const db = fakeWriter({ validate: false });
    const { log, logger } = fakeLog();
    const sink = open(db.writer, logger, 60_000);
    db.failNext(Number.MAX_SAFE_INTEGER);
    const total = 120_000; // past the 100 000 the buffer used to hold before dropping the oldest
    for (let i = 0; i < total; i++) sink.record(event(i, { kind: "session_created" }));
    await settle();
    expect(log.error.mock.calls.some((call) => "dropped" in call[0])).toBe(false);
    db.failNext(0);
    await sink.flush();
    expect(db.stored.size).toBe(total);
  }, 30_000);

  it("while the database is away, calls merge into the records not yet sent: the queue grows with sessions, not calls", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger, 1_000);
    db.failNext(Number.MAX_SAFE_INTEGER);
    // 600 sessions, each calling once a second for a minute, with a flush (failing) every second.
    for (let second = 0; second < 60; second++) {
      for (let s = 0; s < 600; s++) sink.record(event(s, { sessionId: `s-${s}`, quantity: 1 }));
      await vi.advanceTimersByTimeAsync(1_000);
    }
    db.failNext(0);
    await sink.flush();
    // The batch a failed write sent is final; every other waiting record kept taking calls.
    expect(db.stored.size).toBeLessThanOrEqual(600 + BATCH);
    expect([...db.stored.values()].reduce((sum, row) => sum + row.quantity, 0)).toBe(600 * 60);
  }, 30_000);

  it("never loses an unwritten event when the buffer fills while a batch is being written", async () => {
    const db = fakeWriter({ validate: false });
    const { log, logger } = fakeLog();
    const sink = open(db.writer, logger, 60_000);
    const release = db.holdCalls();
    // The 500th event starts a flush of events 0..499, which the database holds while the
    // rest arrive: the batch in flight has left the buffer, so the bound drops nothing.
    for (let i = 0; i < BOUND + 1; i++) sink.record(event(i));
    release();
    await sink.flush();
    await sink.flush();
    expect(log.error).not.toHaveBeenCalled();
    const written = new Set([...db.stored.values()].map((e) => e.quantity));
    const missing = Array.from({ length: BOUND + 1 }, (_, k) => k).filter((i) => !written.has(i));
    expect(missing).toEqual([]);
  }, 30_000);

  it("a non-finite quantity is stored as a valid number instead of poisoning its batch", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger, 60_000);
    sink.record(event(1, { quantity: Number.NaN }));
    sink.record(event(2, { quantity: Number.POSITIVE_INFINITY }));
    sink.record(event(3));
    await sink.flush();
    // The repository refuses a batch holding an invalid event, and the sink retries that
    // batch forever: one bad event would stop all metering.
    expect(db.stored.size).toBe(3);
  });
  it("merges the calls of one session and tool waiting for the same flush", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger, 60_000);
    const call = (tool: string, quantity: number) =>
      sink.record({ workspace: "ws", sessionId: "s", kind: "exec", tool, quantity });
    call("code_execution", 10);
    call("code_execution", 5);
    call("bash_code_execution", 7);
    sink.record({ workspace: "ws", sessionId: "s", kind: "session_ended" });
    sink.record({ workspace: "ws", sessionId: "s", kind: "session_ended" });
    await sink.flush();
    const rows = [...db.stored.values()];
    expect(rows.find((r) => r.tool === "code_execution")).toMatchObject({ quantity: 15, events: 2 });
    expect(rows.find((r) => r.tool === "bash_code_execution")).toMatchObject({ quantity: 7, events: 1 });
    expect(rows.filter((r) => r.kind === "session_ended")).toHaveLength(2);
    // After a flush, later calls start a record of their own.
    call("code_execution", 1);
    await sink.flush();
    expect(db.stored.size).toBe(5);
  });

  const refusal = (
    sink: BufferedUsageSink,
    code: string,
    overrides: { workspace?: string; sessionId?: string; principal?: string | null } = {},
  ) =>
    sink.record({
      workspace: overrides.workspace ?? "ws",
      sessionId: overrides.sessionId ?? "-",
      kind: "denied",
      detail: { operation: "sessions.get", code, status: 404, principal: overrides.principal ?? "alice" },
    });

  it("merges refusals per workspace, operation and code within a second, whatever ids the client sent", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger, 60_000);
    for (let i = 0; i < 300; i++) refusal(sink, "session.not_found", { sessionId: `random-${i}` });
    refusal(sink, "session.not_found", { sessionId: "random-0", principal: "bob" });
    refusal(sink, "quota.calls_in_flight", { sessionId: "x" });
    refusal(sink, "session.not_found", { workspace: "other", sessionId: "y" });
    await sink.flush();
    const rows = [...db.stored.values()];
    expect(rows.map((row) => [row.workspaceId, row.detail?.code, row.events])).toEqual([
      ["ws", "session.not_found", 301],
      ["ws", "quota.calls_in_flight", 1],
      ["other", "session.not_found", 1],
    ]);
    // What an operator needs stays: the first id and principal as samples, and how many distinct ones.
    expect(rows[0]).toMatchObject({
      sessionId: "random-0",
      detail: { principal: "alice", sessions: 100, principals: 2, operation: "sessions.get", status: 404 },
    });
  });

  it("writes a second's refusals on the timer once the second is over: one row a second per code", async () => {
    const db = fakeWriter();
    const sink = open(db.writer, fakeLog().logger, 250);
    // Ten seconds of refusals, 40 a second, with the timer flushing four times a second.
    for (let tick = 0; tick < 400; tick++) {
      refusal(sink, "session.not_found", { sessionId: `id-${tick}` });
      await vi.advanceTimersByTimeAsync(25);
    }
    await sink.close();
    const rows = [...db.stored.values()];
    expect(rows.reduce((sum, row) => sum + (row.events ?? 1), 0)).toBe(400);
    expect(rows).toHaveLength(10);
  });

  it("a refusal flood while the database is away drops only refusals, never a usage record", async () => {
    const db = fakeWriter();
    const { log, logger } = fakeLog();
    const sink = new BufferedUsageSink(db.writer, logger, 1_000, { maxRefusalsWaiting: 50 });
    sinks.push(sink);
    db.failNext(Number.MAX_SAFE_INTEGER);
    for (let second = 0; second < 30; second++) {
      for (let w = 0; w < 20; w++) refusal(sink, "session.not_found", { workspace: `flood-${w}` });
      sink.record(event(second, { kind: "session_created", sessionId: `kept-${second}` }));
      await vi.advanceTimersByTimeAsync(1_000);
    }
    db.failNext(0);
    await sink.flush();
    const rows = [...db.stored.values()];
    expect(rows.filter((row) => row.kind === "session_created")).toHaveLength(30);
    const denied = rows.filter((row) => row.kind === "denied");
    expect(denied.length).toBeLessThanOrEqual(50);
    expect(denied.length).toBeGreaterThan(0);
    expect(log.error.mock.calls.some((call) => (call[0].droppedRows as number) > 0)).toBe(true);
  });
});
