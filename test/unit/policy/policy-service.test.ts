import { describe, expect, it, vi } from "vitest";
import { PolicyService, type WorkspacePolicyStore } from "../../../src/policy/policy-service.js";
import type { WorkspacePolicyFields } from "../../../src/policy/workspace-policy-fields.js";
import { clock } from "../../support/clock.js";
import { deployment } from "./deployment.js";

/** A policy table in memory that counts reads and can be told to fail. */
function table(rows: Record<string, WorkspacePolicyFields> = {}) {
  const reads: string[] = [];
  let failures = 0;
  const source: WorkspacePolicyStore = {
    get: vi.fn(async (workspace: string) => {
      reads.push(workspace);
      if (failures > 0) {
        failures--;
        throw new Error("database unavailable");
      }
      return rows[workspace];
    }),
  };
  return {
    source,
    rows,
    reads,
    failNext: (n = 1) => {
      failures = n;
    },
  };
}

describe("PolicyService", () => {
  it("computes the effective policy from the row", async () => {
    const db = table({ "ws-a": { maxConcurrentSessions: 3 } });
    const service = new PolicyService(deployment(), db.source, 1_000, clock().now);
    const policy = await service.forWorkspace("ws-a");
    expect(policy).toMatchObject({ workspace: "ws-a", configured: true, maxConcurrentSessions: 3 });
    const other = await service.forWorkspace("ws-b");
    expect(other).toMatchObject({ workspace: "ws-b", configured: false, maxConcurrentSessions: 10 });
  });

  it("caches a workspace's policy for the ttl, then refreshes it in the background", async () => {
    const time = clock();
    const db = table({ ws: { sessionsPerMinute: 5 } });
    const service = new PolicyService(deployment(), db.source, 1_000, time.now);
    await service.forWorkspace("ws");
    db.rows.ws = { sessionsPerMinute: 7 };
    time.advance(999);
    expect((await service.forWorkspace("ws")).sessionsPerMinute).toBe(5);
    expect(db.reads).toEqual(["ws"]);
    time.advance(1);
    // Past the TTL the cached value still answers at once; the refresh starts only after
    // the requests that found it stale are answered...
    expect((await service.forWorkspace("ws")).sessionsPerMinute).toBe(5);
    expect((await service.forWorkspace("ws")).sessionsPerMinute).toBe(5);
    expect(db.reads).toEqual(["ws"]);
    await nextTurn();
    // ...one read for both, and the refreshed value answers from then on.
    expect(db.reads).toEqual(["ws", "ws"]);
    expect((await service.forWorkspace("ws")).sessionsPerMinute).toBe(7);
    expect(db.reads).toEqual(["ws", "ws"]);
  });

  it("caches per workspace", async () => {
    const db = table();
    const service = new PolicyService(deployment(), db.source, 1_000, clock().now);
    await service.forWorkspace("a");
    await service.forWorkspace("b");
    await service.forWorkspace("a");
    await service.forWorkspace("b");
    expect(db.reads).toEqual(["a", "b"]);
  });

  it("concurrent callers share one read", async () => {
    const db = table();
    const service = new PolicyService(deployment(), db.source, 1_000, clock().now);
    const policies = await Promise.all(Array.from({ length: 5 }, () => service.forWorkspace("ws")));
    expect(db.reads).toEqual(["ws"]);
    for (const policy of policies) expect(policy).toBe(policies[0]);
  });

  it("invalidate(workspace) drops that workspace only", async () => {
    const db = table({ a: { maxFileBytes: 10 } });
    const service = new PolicyService(deployment(), db.source, 60_000, clock().now);
    await service.forWorkspace("a");
    await service.forWorkspace("b");
    db.rows.a = { maxFileBytes: 20 };
    service.invalidate("a");
    expect((await service.forWorkspace("a")).maxFileBytes).toBe(20);
    await service.forWorkspace("b");
    expect(db.reads).toEqual(["a", "b", "a"]);
  });

  it("invalidate() drops every workspace", async () => {
    const db = table();
    const service = new PolicyService(deployment(), db.source, 60_000, clock().now);
    await service.forWorkspace("a");
    await service.forWorkspace("b");
    service.invalidate();
    await service.forWorkspace("a");
    await service.forWorkspace("b");
    expect(db.reads).toEqual(["a", "b", "a", "b"]);
  });

  it("an invalidation during a read makes the next call read again", async () => {
    const db = table({ ws: { maxFileBytes: 10 } });
    const service = new PolicyService(deployment(), db.source, 60_000, clock().now);
    const first = service.forWorkspace("ws");
    db.rows.ws = { maxFileBytes: 20 };
    service.invalidate("ws");
    expect((await service.forWorkspace("ws")).maxFileBytes).toBe(20);
    await first;
    expect((await service.forWorkspace("ws")).maxFileBytes).toBe(20);
    expect(db.reads).toEqual(["ws", "ws"]);
  });

  it("does not cache a failed read: the error reaches the caller and the next call retries", async () => {
    const db = table({ ws: { maxConcurrentSessions: 4 } });
    const service = new PolicyService(deployment(), db.source, 60_000, clock().now);
    db.failNext();
    await expect(service.forWorkspace("ws")).rejects.toThrow("database unavailable");
    const policy = await service.forWorkspace("ws");
    expect(policy.maxConcurrentSessions).toBe(4);
    expect(db.reads).toEqual(["ws", "ws"]);
    // ...and the successful read is cached as usual.
    await service.forWorkspace("ws");
    expect(db.reads).toHaveLength(2);
  });

  it("callers sharing a failed read all see the failure", async () => {
    const db = table();
    const service = new PolicyService(deployment(), db.source, 60_000, clock().now);
    db.failNext();
    const results = await Promise.allSettled([service.forWorkspace("ws"), service.forWorkspace("ws")]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(db.reads).toEqual(["ws"]);
  });

  it("keeps at most 10 000 workspaces, dropping the oldest entry first", async () => {
    const db = table();
    const service = new PolicyService(deployment(), db.source, 60_000, clock().now);
    const limit = 10_000;
    for (let i = 0; i < limit; i++) await service.forWorkspace(`ws-${i}`);
    expect(db.reads).toHaveLength(limit);
    await service.forWorkspace("ws-new");
    expect(db.reads).toHaveLength(limit + 1);

    // The oldest was dropped to make room; the second oldest and the newest are still cached.
    await service.forWorkspace("ws-1");
    await service.forWorkspace("ws-new");
    expect(db.reads).toHaveLength(limit + 1);
    await service.forWorkspace("ws-0");
    expect(db.reads).toHaveLength(limit + 2);
    expect(db.reads.at(-1)).toBe("ws-0");
    expect((service as unknown as { cache: Map<string, unknown> }).cache.size).toBeLessThanOrEqual(limit);
  });

  it("does not grow past the bound when expired entries are refreshed", async () => {
    const time = clock();
    const db = table();
    const service = new PolicyService(deployment(), db.source, 1_000, time.now);
    for (let i = 0; i < 10_000; i++) await service.forWorkspace(`ws-${i}`);
    time.advance(5_000);
    for (let i = 0; i < 10_100; i++) await service.forWorkspace(`ws-${i % 10_050}`);
    await nextTurn();
    await nextTurn();
    expect((service as unknown as { cache: Map<string, unknown> }).cache.size).toBeLessThanOrEqual(10_000);
  });
});

/** Lets the background work scheduled by the calls so far run (a turn of the event loop). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
