/**
 * The usage drainer (src/metering/usage-drainer.ts) over the memory store's backlog: every
 * record written once, merged per session, kind and tool within a batch; a failed write or
 * a drainer that dies before acknowledging loses nothing and counts nothing twice.
 */
import type { Logger } from "pino";
import { describe, expect, it, vi } from "vitest";
import { mergeUsageBatch } from "../../../src/metering/merge-usage.js";
import { UsageDrainer, type UsageRowWriter } from "../../../src/metering/usage-drainer.js";
import { stableEventId, usageRecord } from "../../../src/metering/usage-record.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";
import { type UsageEvent, usageEventSchema } from "../../../src/store/sql/usage-event.js";

const logger = { error: vi.fn(), warn: vi.fn(), info: vi.fn(), debug: vi.fn() } as unknown as Logger;
const T0 = Date.UTC(2026, 11, 5, 12);

/** A repository as Postgres behaves: rows by event id, an id it has ignored. */
class FakeRepository implements UsageRowWriter {
  readonly rows = new Map<string, UsageEvent>();
  failing = false;
  async insert(events: readonly UsageEvent[]): Promise<number> {
    if (this.failing) throw new Error("connection refused");
    usageEventSchema.array().parse(events);
    let added = 0;
    for (const event of events) {
      if (this.rows.has(event.eventId)) continue;
      this.rows.set(event.eventId, structuredClone(event));
      added++;
    }
    return added;
  }
  /** Calls and their quantity per kind, as a usage summary adds them up. */
  totals(): Record<string, { count: number; quantity: number }> {
    const totals: Record<string, { count: number; quantity: number }> = {};
    for (const row of this.rows.values()) {
      totals[row.kind] ??= { count: 0, quantity: 0 };
      const total = totals[row.kind]!;
      total.count += row.events ?? 1;
      total.quantity += row.quantity;
    }
    return totals;
  }
}

const exec = (sessionId: string, quantity: number, at = T0) =>
  usageRecord({ workspace: "ws", sessionId, kind: "exec", tool: "code_execution", quantity }, at);

describe("mergeUsageBatch", () => {
  it("merges calls of one session, kind and tool; keeps sessions, kinds and tools apart", () => {
    const { rows, unreadable } = mergeUsageBatch("ws", [
      exec("s1", 10),
      exec("s1", 5),
      exec("s2", 7),
      usageRecord({ workspace: "ws", sessionId: "s1", kind: "file_in", quantity: 100 }, T0),
      usageRecord({ workspace: "ws", sessionId: "s1", kind: "session_ended", quantity: 9 }, T0),
      usageRecord({ workspace: "ws", sessionId: "s1", kind: "session_ended", quantity: 9 }, T0),
      "not json",
    ]);
    expect(unreadable).toBe(1);
    expect(rows.map((r) => [r.sessionId, r.kind, r.quantity, r.events])).toEqual([
      ["s1", "exec", 15, 2],
      ["s2", "exec", 7, 1],
      ["s1", "file_in", 100, 1],
      ["s1", "session_ended", 9, 1],
      ["s1", "session_ended", 9, 1],
    ]);
    expect(rows.every((row) => row.workspaceId === "ws")).toBe(true);
  });

  it("makes the same rows, ids included, from the same batch; an id met twice counts once", () => {
    const batch = [exec("s1", 10), exec("s1", 5), exec("s2", 1)];
    const again = mergeUsageBatch("ws", [...batch, batch[0]!]);
    expect(again.rows).toEqual(mergeUsageBatch("ws", batch).rows);
    expect(again.rows[0]!.eventId).toBe(JSON.parse(batch[0]!).eventId);
    expect(again.rows[0]!.quantity).toBe(15);
  });

  it("reads back an empty detail as none (Lua writes {} as [])", () => {
    const raw = JSON.stringify({
      eventId: stableEventId("x"),
      sessionId: "s",
      kind: "session_ended",
      quantity: 1,
      occurredAt: T0,
      detail: [],
    });
    expect(mergeUsageBatch("ws", [raw]).rows[0]!.detail).toBeNull();
  });
});

describe("stableEventId", () => {
  it("is a UUID the repository accepts, the same for the same parts, different otherwise", () => {
    const id = stableEventId("ws", "s", "sb", "sandbox_cpu");
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(stableEventId("ws", "s", "sb", "sandbox_cpu")).toBe(id);
    expect(stableEventId("ws", "s", "sb", "sandbox_memory_peak")).not.toBe(id);
  });
});

describe("UsageDrainer", () => {
  it("writes every workspace's backlog, merged, and leaves nothing waiting", async () => {
    const store = new MemoryCoordinationStore();
    const repository = new FakeRepository();
    await store.appendUsage("ws", [exec("s1", 10), exec("s1", 20)]);
    await store.appendUsage("other", [
      usageRecord({ workspace: "other", sessionId: "s9", kind: "exec", quantity: 3 }, T0),
    ]);
    const drainer = new UsageDrainer(store, repository, logger, { now: () => T0 + 1_000 });
    expect(await drainer.drain()).toEqual({ records: 0, oldestAgeMs: 0, healthy: true });
    expect(repository.rows.size).toBe(2);
    expect(repository.totals()).toEqual({ exec: { count: 3, quantity: 33 } });
    expect(await store.usageWorkspaces(T0)).toEqual([]);
  });

  it("drains in batches: a backlog larger than a batch is written whole", async () => {
    const store = new MemoryCoordinationStore();
    const repository = new FakeRepository();
    await store.appendUsage(
      "ws",
      Array.from({ length: 25 }, (_, i) => exec(`s${i % 3}`, 1)),
    );
    await new UsageDrainer(store, repository, logger, { batchSize: 4 }).drain();
    expect(repository.totals()).toEqual({ exec: { count: 25, quantity: 25 } });
  });

  it("keeps the backlog while Postgres is away and reports its size and age; writes it once back", async () => {
    const store = new MemoryCoordinationStore();
    const repository = new FakeRepository();
    let now = T0;
    const drainer = new UsageDrainer(store, repository, logger, { now: () => now, claimMs: 1 });
    await store.appendUsage("ws", [exec("s1", 10, T0), exec("s2", 5, T0 + 500)]);
    repository.failing = true;
    now = T0 + 60_000;
    expect(await drainer.drain()).toEqual({ records: 2, oldestAgeMs: 60_000, healthy: false });
    await store.appendUsage("ws", [exec("s1", 1, now)]);
    now += 60_000;
    expect((await drainer.drain()).records).toBe(3);
    repository.failing = false;
    now += 10;
    expect(await drainer.drain()).toEqual({ records: 0, oldestAgeMs: 0, healthy: true });
    expect(repository.totals()).toEqual({ exec: { count: 3, quantity: 16 } });
  });

  it("a drainer that dies after writing and before acknowledging: the next writes the same rows, counted once", async () => {
    const store = new MemoryCoordinationStore();
    const repository = new FakeRepository();
    await store.appendUsage("ws", [exec("s1", 10), exec("s1", 20), exec("s2", 1)]);
    // The first drainer writes its batch and dies before acknowledging it.
    const dying = new UsageDrainer(
      { ...bound(store), ackUsage: async () => new Promise<boolean>(() => {}) },
      repository,
      logger,
      { claimMs: 1, now: () => T0 },
    );
    void dying.drain();
    await vi.waitFor(() => expect(repository.rows.size).toBe(2));
    await store.appendUsage("ws", [exec("s1", 100)]);
    // Its claim lapses; the next drainer gets the same batch, then the rest.
    const next = new UsageDrainer(store, repository, logger, { now: () => T0 + 10 });
    expect((await next.drain()).records).toBe(0);
    expect(repository.totals()).toEqual({ exec: { count: 4, quantity: 131 } });
  });

  it("two drainers at once write everything once", async () => {
    const store = new MemoryCoordinationStore();
    const repository = new FakeRepository();
    for (let i = 0; i < 50; i++) await store.appendUsage(`ws${i % 5}`, [exec(`s${i}`, i)]);
    const a = new UsageDrainer(store, repository, logger, { batchSize: 3 });
    const b = new UsageDrainer(store, repository, logger, { batchSize: 3 });
    await Promise.all([a.drain(), b.drain(), a.drain()]);
    await a.drain();
    expect(repository.totals()).toEqual({ exec: { count: 50, quantity: (49 * 50) / 2 } });
  });
});

/** The store's backlog methods, bound, so one can be replaced. */
function bound(store: MemoryCoordinationStore) {
  return {
    claimUsage: store.claimUsage.bind(store),
    ackUsage: store.ackUsage.bind(store),
    usageWorkspaces: store.usageWorkspaces.bind(store),
    usageBacklogSize: store.usageBacklogSize.bind(store),
    markUsageWaiting: store.markUsageWaiting.bind(store),
  };
}
