/**
 * What a replica that dies leaves in flight is reclaimed by another's reconciliation: the
 * sandboxes it was starting (warm-up or cold) or handing out to a session whose lease it
 * never recorded have their places freed and their containers destroyed as soon as their
 * in-flight marks lapse, not an hour later (a handed-out sandbox's member expiry) and not
 * after the orphan grace. Two PoolManagers share one memory store and one stand-in engine;
 * the dead one's clock stands still, so its renewals stop moving its marks, as a killed
 * replica's would.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { SandboxClient } from "../../../src/forward/sandbox-client.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import { IN_FLIGHT_MARK_MS } from "../../../src/pool/in-flight-marks.js";
import { PoolManager } from "../../../src/pool/pool-manager.js";
import { reconcile } from "../../../src/pool/reconcile.js";
import type { PoolSpec, RuntimeSandbox, SandboxRuntime } from "../../../src/runtime/sandbox-runtime.js";
import type { SessionLifecycle } from "../../../src/session/session-lifecycle.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";
import type { Lease } from "../../../src/store/coordination/records.js";

const T0 = 1_800_000_000_000;
const HOUR = 3_600_000;
const ORPHAN_GRACE_MS = 120_000;
const pool: PoolSpec = {
  name: "p",
  image: "img",
  resourceClass: "standard",
  minIdle: 0,
  maxTotal: 4,
  warmupConcurrency: 2,
  coldStartTimeoutMs: 30_000,
};

/** One engine both replicas use: containers appear on start and stay until destroyed. */
function sharedEngine() {
  const containers = new Map<string, RuntimeSandbox>();
  const held: (() => void)[] = [];
  let holdStarts = false;
  const runtime: SandboxRuntime = {
    kind: "docker",
    isolated: true,
    start: async ({ sandboxId }) => {
      const runtimeId = `rt-${sandboxId}`;
      containers.set(runtimeId, { runtimeId, sandboxId, pool: pool.name, createdAt: T0, running: true });
      if (holdStarts) await new Promise<void>((resolve) => held.push(resolve));
      return { runtimeId, endpoint: "http://127.0.0.1:9" };
    },
    destroy: async (runtimeId) => {
      containers.delete(runtimeId);
    },
    list: async () => [...containers.values()],
    close: async () => undefined,
  };
  return {
    runtime,
    containers,
    /** Starts from now on never finish: the replica dies with them under way. */
    hangStarts() {
      holdStarts = true;
    },
  };
}

function replica(store: MemoryCoordinationStore, runtime: SandboxRuntime, now: () => number) {
  return new PoolManager({
    pools: [pool],
    store,
    runtime,
    client: { createInnerSession: async () => "inner" } as unknown as SandboxClient,
    metrics: new GatewayMetrics({ processMetrics: false }),
    log: pino({ level: "silent" }),
    now,
  });
}

const HOLD = { workspace: "w", until: T0 + HOUR, now: T0 };

describe("a dead replica's starts and hand-outs", () => {
  it("are reclaimed once their marks lapse: places freed, containers destroyed, recorded leases kept", async () => {
    const store = new MemoryCoordinationStore();
    const engine = sharedEngine();
    const dead = replica(store, engine.runtime, () => T0);

    // Handed out: a cold start leased and held for an hour, and a warm sandbox leased, with no
    // lease recorded for either (the replica died first).
    const cold = await dead.lease(pool, HOLD);
    expect(cold.warm).toBe(false);
    await dead.holdMembership(cold.record, HOLD);
    await dead.warm({ ...pool, minIdle: 1 });
    const warm = await dead.lease(pool, HOLD);
    expect(warm.warm).toBe(true);
    // One it handed out whose lease it did record: that session goes on.
    const served = await dead.lease(pool, HOLD);
    await dead.holdMembership(served.record, HOLD);
    const lease: Lease = {
      sessionId: "s1",
      workspace: "w",
      pool: pool.name,
      image: pool.image,
      sandbox: served.record,
      createdAt: T0,
      lastActivityAt: T0,
      idleTimeoutSeconds: 3_600,
      maxLifetimeSeconds: 3_600,
    };
    await store.putLease(lease);
    // And a start under way when it died.
    engine.hangStarts();
    void dead.lease(pool, HOLD);
    while (engine.containers.size < 4) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await store.countMembers(pool.name, T0)).toBe(4);

    const survivor = replica(store, engine.runtime, () => T0);
    const sessions = { end: async () => false } as unknown as SessionLifecycle;
    const reconcileAt = (at: number) =>
      reconcile({
        runtime: engine.runtime,
        store,
        pools: survivor,
        sessions,
        log: pino({ level: "silent" }),
        orphanGraceMs: ORPHAN_GRACE_MS,
        now: () => at,
      });

    // While the marks hold, nothing is touched: the replica may only be slow.
    const early = await reconcileAt(T0 + IN_FLIGHT_MARK_MS - 1);
    expect(early.inFlightReclaimed).toBe(0);
    expect(engine.containers.size).toBe(4);

    // Past them (and well inside the orphan grace), the three it left are gone.
    const after = T0 + IN_FLIGHT_MARK_MS + 1;
    const report = await reconcileAt(after);
    expect(report.inFlightReclaimed).toBe(3);
    expect(await store.listMembers(pool.name, after)).toEqual([served.record.sandboxId]);
    expect([...engine.containers.values()].map((c) => c.sandboxId)).toEqual([served.record.sandboxId]);
    expect(await store.getLease({ workspace: "w", sessionId: "s1" })).toEqual(lease);
    // The recorded lease's mark is ended, not reclaimed, and the pool has its places back.
    expect(await store.listInFlight(pool.name)).toEqual([]);
    expect(await store.countWarming(pool.name, after)).toBe(0);
    expect((await survivor.capacity(pool)).outcome).toBe("cold");
  });

  it("a live replica's start keeps its place: the mark is renewed while it runs", async () => {
    const store = new MemoryCoordinationStore();
    const engine = sharedEngine();
    let clock = T0;
    const alive = replica(store, engine.runtime, () => clock);
    engine.hangStarts();
    void alive.lease(pool, HOLD);
    while (engine.containers.size < 1) await new Promise((resolve) => setTimeout(resolve, 5));
    // Its renewal (every third of the mark) runs on the real timer; the clock it reads moves on.
    clock = T0 + IN_FLIGHT_MARK_MS;
    await new Promise((resolve) => setTimeout(resolve, IN_FLIGHT_MARK_MS / 3 + 200));
    const [mark] = await store.listInFlight(pool.name);
    expect(mark!.until).toBe(clock + IN_FLIGHT_MARK_MS);
    expect(await store.reclaimInFlight(pool.name, mark!.sandboxId, T0 + IN_FLIGHT_MARK_MS + 1)).toBe(false);
  }, 15_000);
});
