/**
 * Warm-up around a stand-in runtime that counts starts in flight: the machine's cap holds
 * across pools (each pool's warmupConcurrency on top), cold starts never wait for it, one
 * warm-up per pool at a time that refills as each start ends (a slow one holds nothing back)
 * and is woken by a lease, demand raises the top-up (never above maxTotal), and a failing
 * image is logged once per back-off step with its reason kept for the pool view.
 */
import { pino } from "pino";
import { describe, expect, it, vi } from "vitest";
import type { SandboxClient } from "../../../src/forward/sandbox-client.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import { PoolManager } from "../../../src/pool/pool-manager.js";
import { BURST_STARTS_MAX } from "../../../src/pool/start-gate.js";
import { WarmupLimiter } from "../../../src/pool/warmup-limiter.js";
import type { PoolSpec, SandboxRuntime } from "../../../src/runtime/sandbox-runtime.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";

/** What a lease holds its sandbox's place for (a workspace, far ahead). */
const HOLD = { workspace: "w", until: Number.MAX_SAFE_INTEGER, now: 0 };

const spec = (name: string, overrides: Partial<PoolSpec> = {}): PoolSpec => ({
  name,
  image: `img-${name}`,
  resourceClass: "standard",
  minIdle: 4,
  maxTotal: 10,
  warmupConcurrency: 3,
  coldStartTimeoutMs: 5_000,
  ...overrides,
});

/** A dry pool with room for a burst, whose warm-up starts one at a time. */
const burstPool = (timeouts: Partial<PoolSpec> = {}) =>
  spec("a", { minIdle: 0, maxTotal: 100, warmupConcurrency: 1, coldStartTimeoutMs: 60_000, ...timeouts });

/** A runtime whose starts finish when the test says so, counting how many run at once. */
function gatedRuntime() {
  const waiting: (() => void)[] = [];
  const counts = { inFlight: 0, most: 0, started: 0 };
  let fail: string | undefined;
  const runtime: SandboxRuntime = {
    kind: "process",
    isolated: false,
    start: async () => {
      counts.inFlight++;
      counts.most = Math.max(counts.most, counts.inFlight);
      await new Promise<void>((resolve) => waiting.push(resolve));
      counts.inFlight--;
      if (fail !== undefined) throw new Error(fail);
      counts.started++;
      return { runtimeId: `rt-${counts.started}`, endpoint: "http://127.0.0.1:9" };
    },
    destroy: async () => undefined,
    list: async () => [],
    close: async () => undefined,
  };
  return {
    runtime,
    counts,
    failWith(message: string | undefined) {
      fail = message;
    },
    /** Lets every start in flight finish, over a few turns of the event loop. */
    async release() {
      for (let round = 0; round < 50; round++) {
        while (waiting.length > 0) waiting.shift()!();
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
    /** Lets the oldest start in flight finish, and only it. */
    async releaseOne() {
      waiting.shift()?.();
      for (let round = 0; round < 20; round++) await new Promise((resolve) => setImmediate(resolve));
    },
    async settle() {
      for (let round = 0; round < 20; round++) await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

function poolManager(pools: PoolSpec[], runtime: SandboxRuntime, maxStarts: number, now?: () => number) {
  const lines: { level: number; msg: string; pool?: string }[] = [];
  const log = pino(
    { level: "debug" },
    { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) },
  );
  const store = new MemoryCoordinationStore();
  const limiter = new WarmupLimiter(maxStarts);
  const manager = new PoolManager({
    pools,
    store,
    runtime,
    client: { createInnerSession: async () => "inner" } as unknown as SandboxClient,
    metrics: new GatewayMetrics({ processMetrics: false }),
    log,
    warmupLimiter: limiter,
    now,
  });
  return { manager, store, limiter, lines };
}

describe("warm-up concurrency", () => {
  it("never runs more warm-up starts than the machine's cap, all pools together", async () => {
    const gate = gatedRuntime();
    const pools = [spec("a"), spec("b"), spec("c")];
    const { manager, store, limiter } = poolManager(pools, gate.runtime, 2);
    const warming = manager.warmAll();
    await gate.settle();
    expect(gate.counts.inFlight).toBe(2); // 3 pools x warmupConcurrency 3 wanted 9
    expect(limiter.active).toBe(2);
    // Each tick, whatever frees up is taken again, never beyond the cap.
    const ticks: Promise<void>[] = [warming];
    for (let tick = 0; tick < 12; tick++) {
      await gate.release();
      ticks.push(manager.warmAll());
      await gate.settle();
      expect(gate.counts.inFlight).toBeLessThanOrEqual(2);
    }
    await gate.release();
    await Promise.all(ticks);
    expect(gate.counts.most).toBe(2);
    for (const pool of pools) expect(await store.listIdle(pool.name)).toHaveLength(4);
    expect(limiter.active).toBe(0);
  });

  it("keeps each pool within its own warmupConcurrency under a larger cap", async () => {
    const gate = gatedRuntime();
    const { manager } = poolManager([spec("a", { warmupConcurrency: 1 })], gate.runtime, 8);
    const warming = manager.warmAll();
    await gate.settle();
    expect(gate.counts.inFlight).toBe(1);
    for (let i = 0; i < 6; i++) await gate.release();
    await warming;
    expect(gate.counts.most).toBe(1);
  });

  it("lets a client's cold start through while warm-up holds every place", async () => {
    const gate = gatedRuntime();
    const pool = spec("a", { minIdle: 2, warmupConcurrency: 2 });
    const { manager, limiter } = poolManager([pool], gate.runtime, 2);
    const warming = manager.warm(pool);
    await gate.settle();
    expect(limiter.active).toBe(2);
    // The pool is dry (both are still starting): the lease cold-starts a third at once.
    const leasing = manager.lease(pool, HOLD);
    await gate.settle();
    expect(gate.counts.inFlight).toBe(3);
    await gate.release();
    expect((await leasing).warm).toBe(false);
    await warming;
  });

  it("a lease at the cap while warm-up starts fill it waits for one to turn idle", async () => {
    const gate = gatedRuntime();
    const pool = spec("a", { minIdle: 2, maxTotal: 2, warmupConcurrency: 2 });
    const { manager, store } = poolManager([pool], gate.runtime, 2);
    const warming = manager.warm(pool);
    await gate.settle();
    expect(await store.countWarming(pool.name, Date.now())).toBe(2);
    expect((await manager.capacity(pool)).outcome).toBe("wait"); // what explain says meanwhile
    let settled = false;
    const leasing = manager.lease(pool, HOLD).finally(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled).toBe(false); // no idle sandbox, no place for a cold start: it waits
    expect(gate.counts.inFlight).toBe(2);
    await gate.releaseOne();
    expect((await leasing).warm).toBe(true);
    await gate.release();
    await warming;
    expect(gate.counts.started).toBe(2); // no start beyond the cap
  });

  it("a lease at the cap waits for a sandbox being destroyed to free its place", async () => {
    const gate = gatedRuntime();
    const pool = spec("a", { minIdle: 0, maxTotal: 1 });
    const { manager } = poolManager([pool], gate.runtime, 2);
    const first = manager.lease(pool, HOLD);
    await gate.release();
    const { record } = await first;
    await manager.holdMembership(record, HOLD);
    await manager.markRetiring(record); // its session ended: the destroy job runs later
    const second = manager.lease(pool, HOLD);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(gate.counts.inFlight).toBe(0); // waiting: no place for a start yet
    await manager.retire(record);
    // The next poll finds the place and cold-starts into it.
    while (gate.counts.inFlight === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await gate.release();
    expect((await second).warm).toBe(false);
  });

  it("a pool full of leased sandboxes refuses at once; a wait ends at the cold-start deadline", async () => {
    const gate = gatedRuntime();
    const full = spec("full", { minIdle: 1, maxTotal: 1 });
    const slow = spec("slow", { minIdle: 1, maxTotal: 1, coldStartTimeoutMs: 100 });
    const { manager } = poolManager([full, slow], gate.runtime, 2);
    const warmingFull = manager.warm(full);
    await gate.release();
    await warmingFull;
    await manager.lease(full, HOLD);
    const began = Date.now();
    await expect(manager.lease(full, HOLD)).rejects.toMatchObject({ code: "capacity.exhausted" });
    expect(Date.now() - began).toBeLessThan(100);

    const warmingSlow = manager.warm(slow); // its one start never ends while the lease waits
    await gate.settle();
    const waitBegan = Date.now();
    await expect(manager.lease(slow, HOLD)).rejects.toMatchObject({ code: "capacity.exhausted" });
    expect(Date.now() - waitBegan).toBeGreaterThanOrEqual(95);
    await gate.release();
    await warmingSlow;
  });

  it("a lease waiting for its workspace's sandbox being scrubbed has warm-up start one more for it", async () => {
    const gate = gatedRuntime();
    const pool = spec("a", { minIdle: 0, warmupConcurrency: 2 });
    const { manager, store } = poolManager([pool], { ...gate.runtime, recyclable: true }, 4);
    let scrubbed!: () => void;
    (manager as unknown as { reuse: { deps: { client: unknown } } }).reuse.deps.client = {
      recycleSandbox: () => new Promise<string>((resolve) => (scrubbed = () => resolve("inner-2"))),
    };
    const first = manager.lease(pool, HOLD);
    await gate.release();
    const { record } = await first;
    const parking = manager.recycle(record, HOLD.workspace);
    await gate.settle();
    expect(gate.counts.inFlight).toBe(0); // minIdle 0: nothing is wanted yet

    const second = manager.lease(pool, HOLD);
    await gate.settle();
    // The lease waits for the scrub, and the pool starts a fresh sandbox for the shortfall.
    expect(gate.counts.inFlight).toBe(1);
    scrubbed();
    expect(await parking).toBe(true);
    const leased = await second;
    expect(leased).toMatchObject({ reused: true, record: { sandboxId: record.sandboxId } });
    await gate.release();
    expect(await store.listIdle(pool.name)).toHaveLength(1);
  });

  it("counts another replica's warm-up starts in the shortfall", async () => {
    const gate = gatedRuntime();
    const pool = spec("a", { minIdle: 2, warmupConcurrency: 2 });
    const first = poolManager([pool], gate.runtime, 2);
    // A second replica on the same store, with its own warm-up.
    const second = new PoolManager({
      pools: [pool],
      store: first.store,
      runtime: gate.runtime,
      client: { createInnerSession: async () => "inner" } as unknown as SandboxClient,
      metrics: new GatewayMetrics({ processMetrics: false }),
      log: pino({ level: "silent" }),
      warmupLimiter: new WarmupLimiter(2),
    });
    const warming = first.manager.warm(pool);
    await gate.settle();
    await second.warm(pool); // the shortfall is being started already: nothing to start
    expect(gate.counts.inFlight).toBe(2);
    await gate.release();
    await warming;
    expect(gate.counts.started).toBe(2);
  });

  it("runs one warm-up per pool at a time: concurrent calls do not start the shortfall twice", async () => {
    const gate = gatedRuntime();
    const pool = spec("a", { minIdle: 2, warmupConcurrency: 4 });
    const { manager, store } = poolManager([pool], gate.runtime, 8);
    const calls = [manager.warm(pool), manager.warm(pool), manager.warm(pool)];
    await gate.settle();
    expect(gate.counts.inFlight).toBe(2);
    await gate.release();
    await Promise.all(calls);
    expect(gate.counts.started).toBe(2);
    expect(await store.listIdle(pool.name)).toHaveLength(2);
  });
});

describe("refilling as places free up", () => {
  it("starts the next sandbox as soon as one start ends, however slow the other is", async () => {
    const gate = gatedRuntime();
    const pool = spec("a", { minIdle: 4, warmupConcurrency: 2 });
    const { manager, store } = poolManager([pool], gate.runtime, 8);
    const warming = manager.warm(pool);
    await gate.settle();
    expect(gate.counts.inFlight).toBe(2);
    // The first start ends; the second is still slow: a third starts at once.
    await gate.releaseOne();
    expect(await store.listIdle(pool.name)).toHaveLength(1);
    expect(gate.counts.inFlight).toBe(2);
    await gate.releaseOne();
    await gate.releaseOne();
    expect(gate.counts.inFlight).toBe(1); // 3 idle, the fourth starting
    await gate.release();
    await warming;
    expect(await store.listIdle(pool.name)).toHaveLength(4);
    expect(gate.counts.most).toBe(2);
  });

  it("a lease during a warm-up is refilled by the running warm-up, not a second one", async () => {
    const gate = gatedRuntime();
    const pool = spec("a", { minIdle: 2, warmupConcurrency: 3 });
    const { manager, store } = poolManager([pool], gate.runtime, 8);
    const first = manager.warm(pool);
    await gate.release();
    await first;
    expect(await store.listIdle(pool.name)).toHaveLength(2);
    // A slow refill is running (one lease taken) when a second lease takes the other idle one.
    await manager.lease(pool, HOLD);
    const refilling = manager.warm(pool);
    // Waited for, not a fixed number of turns: on a busy machine the store's steps take longer.
    await vi.waitFor(() => expect(gate.counts.inFlight).toBe(1));
    await manager.lease(pool, HOLD);
    await manager.warm(pool); // wakes the running warm-up and returns at once
    await vi.waitFor(() => expect(gate.counts.inFlight).toBe(2)); // woken: the second shortfall started too
    await gate.settle();
    expect(gate.counts.inFlight).toBe(2); // and no more
    await gate.release();
    await refilling;
    expect(await store.listIdle(pool.name)).toHaveLength(2);
    expect(gate.counts.started).toBe(4);
  });
});

describe("demand-driven warm-up", () => {
  it("tops up to the effective minIdle the deployment's demand asks for, never above maxTotal", async () => {
    const gate = gatedRuntime();
    let clock = 0;
    const pool = spec("a", { minIdle: 1, maxTotal: 5, warmupConcurrency: 10 });
    const { manager, store } = poolManager([pool], gate.runtime, 10, () => clock);
    // The deployment leased 4 a second for a minute, each refill taking 2 s: 8 wanted, 5 at most.
    for (let leases = 0; clock <= 60_000; clock += 1_000, leases += 4) {
      manager.demand.observeDeployment(
        pool.name,
        { warmLeases: leases, coldLeases: 0, warmupFailures: 0, refillMs: [2_000], startFailure: null },
        clock,
      );
    }
    expect(manager.effectiveMinIdle(pool)).toBe(5);
    const warming = manager.warm(pool);
    for (let i = 0; i < 5; i++) await gate.release();
    await warming;
    expect(await store.listIdle(pool.name)).toHaveLength(5);

    const off = spec("b", { minIdle: 1, demand: false });
    const other = poolManager([off], gate.runtime, 10, () => clock).manager;
    other.demand.observeDeployment(
      off.name,
      { warmLeases: 0, coldLeases: 0, warmupFailures: 0, refillMs: [2_000], startFailure: null },
      0,
    );
    other.demand.observeDeployment(
      off.name,
      { warmLeases: 400, coldLeases: 0, warmupFailures: 0, refillMs: [2_000], startFailure: null },
      10_000,
    );
    expect(other.effectiveMinIdle(off)).toBe(1);
  });
});

describe("a failing image", () => {
  it("is logged once per back-off step, and says why until a start succeeds", async () => {
    const gate = gatedRuntime();
    let clock = 0;
    const pool = spec("a", { minIdle: 2, warmupConcurrency: 2 });
    const { manager, lines } = poolManager([pool], gate.runtime, 4, () => clock);
    gate.failWith("pull access denied for img-a");
    const warming = manager.warm(pool);
    await gate.release();
    await warming;
    // Two starts failed together: one step, one error line.
    const errors = () => lines.filter((line) => line.level === 50 && line.pool === "a");
    expect(errors()).toHaveLength(1);
    expect(manager.demand.countersOf("a").warmupFailures).toBe(2);
    expect(manager.startFailureOf("a")).toEqual({
      message: "pull access denied for img-a",
      at: 0,
      nextAttemptAt: 1_000,
      consecutiveFailures: 1,
    });
    // Ticks during the wait start nothing and log nothing.
    for (clock = 100; clock < 1_000; clock += 100) await manager.warm(pool);
    expect(gate.counts.inFlight).toBe(0);
    expect(errors()).toHaveLength(1);
    // The next step fails again: one more line, a longer wait.
    clock = 1_000;
    const again = manager.warm(pool);
    await gate.release();
    await again;
    expect(errors()).toHaveLength(2);
    expect(manager.startFailureOf("a")).toMatchObject({ nextAttemptAt: 3_000, consecutiveFailures: 2 });
    // Fixed: the next start succeeds and the reason is gone.
    gate.failWith(undefined);
    clock = 3_000;
    const fixed = manager.warm(pool);
    await gate.release();
    await fixed;
    expect(manager.startFailureOf("a")).toBeUndefined();
  });

  it("waits for another replica's back-off too", async () => {
    const gate = gatedRuntime();
    const clock = 5_000;
    const pool = spec("a", { minIdle: 1 });
    const { manager } = poolManager([pool], gate.runtime, 4, () => clock);
    const failure = { message: "no such image", at: 4_000, nextAttemptAt: 8_000, consecutiveFailures: 3 };
    manager.demand.observeDeployment(
      pool.name,
      { warmLeases: 0, coldLeases: 0, warmupFailures: 3, refillMs: [], startFailure: failure },
      clock,
    );
    await manager.warm(pool);
    expect(gate.counts.inFlight + gate.counts.started).toBe(0);
    expect(manager.startFailureOf("a")).toEqual(failure);
  });
});

describe("a burst of leases on a dry pool", () => {
  it("starts no more at once than the start gate allows, and every lease gets a sandbox", async () => {
    const gate = gatedRuntime();
    const pool = burstPool();
    const { manager } = poolManager([pool], gate.runtime, 1);
    // Forty leases at once: each looked at the gate before any start was counted (the store's
    // first await), which let every one of them through before the gate counted starts first.
    const leases = Array.from({ length: 40 }, () => manager.lease(pool, HOLD));
    await gate.settle();
    expect(gate.counts.inFlight).toBeLessThanOrEqual(BURST_STARTS_MAX + 1); // + warm-up's one
    for (let round = 0; round < 40 && gate.counts.started < 40; round++) {
      await gate.releaseOne();
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(gate.counts.inFlight).toBeLessThanOrEqual(BURST_STARTS_MAX + 1);
    }
    await gate.release();
    const leased = await Promise.all(leases);
    expect(new Set(leased.map((lease) => lease.record.sandboxId)).size).toBe(40);
    expect(gate.counts.most).toBeLessThanOrEqual(BURST_STARTS_MAX + 1);
  });

  it("a start's end sends one waiting lease to the store, not every one (the longest waiting first)", async () => {
    const gate = gatedRuntime();
    const pool = burstPool();
    const { manager, store } = poolManager([pool], gate.runtime, 1);
    const lookups = vi.spyOn(store, "leaseIdle");
    const order: number[] = [];
    const leases = Array.from({ length: 30 }, (_, i) =>
      manager.lease(pool, HOLD).then((lease) => {
        order.push(i);
        return lease;
      }),
    );
    await gate.settle();
    const before = lookups.mock.calls.length;
    await gate.releaseOne();
    // Before: all twenty-odd waiting leases looked in the store at each end.
    expect(lookups.mock.calls.length - before).toBeLessThanOrEqual(3);
    await gate.release();
    for (let round = 0; round < 40 && order.length < 30; round++) await gate.release();
    await Promise.all(leases);
    // The waiting ones (past the gate's first starts) are served in the order they came.
    const waited = order.filter((i) => i >= BURST_STARTS_MAX);
    expect(waited).toEqual([...waited].sort((a, b) => a - b));
  });

  it("counts a queued lease as demand when it queues, once, so the burst reserve sees when the burst came", async () => {
    const gate = gatedRuntime();
    const pool = burstPool();
    const { manager } = poolManager([pool], gate.runtime, 1);
    const leases = Array.from({ length: 30 }, () => manager.lease(pool, HOLD));
    await gate.settle();
    // Before any start ended: every lease past the gate's first starts is counted already.
    const queued = manager.demand.countersOf("a");
    expect(queued.coldLeases).toBeGreaterThanOrEqual(30 - BURST_STARTS_MAX);
    for (let round = 0; round < 40 && gate.counts.started < 30; round++) await gate.release();
    await Promise.all(leases);
    const served = manager.demand.countersOf("a");
    expect(served.warmLeases + served.coldLeases).toBe(30);
  });

  it("another workspace's lease that queues behind a burst is served at the next turn, not after the burst", async () => {
    const gate = gatedRuntime();
    const pool = burstPool();
    const { manager } = poolManager([pool], gate.runtime, 1);
    const served: string[] = [];
    const lease = (workspace: string) =>
      manager.lease(pool, { ...HOLD, workspace }).then(() => served.push(workspace));
    const burst = Array.from({ length: 24 }, () => lease("tenant-a"));
    await gate.settle();
    const other = lease("tenant-b");
    await gate.settle();
    for (let round = 0; round < 60 && served.length < 25; round++) await gate.releaseOne();
    await Promise.all([...burst, other]);
    // The gate's first starts were tenant-a's; of the queued leases, tenant-b's came last but
    // is among the first few served (in arrival order it would be the 25th).
    expect(served.indexOf("tenant-b")).toBeLessThan(BURST_STARTS_MAX + 4);
  });
});

describe("a lease's turn at the start gate", () => {
  const queued = BURST_STARTS_MAX + 2;

  it("may last past the cold-start deadline: a burst is served late rather than refused", async () => {
    const gate = gatedRuntime();
    const pool = burstPool({ coldStartTimeoutMs: 100, startQueueTimeoutMs: 10_000 });
    const { manager } = poolManager([pool], gate.runtime, 1);
    const leases = Array.from({ length: queued }, () => manager.lease(pool, HOLD));
    await gate.settle();
    // Three cold-start deadlines pass while the first starts hold the gate.
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (let round = 0; round < 40 && gate.counts.started < queued; round++) await gate.release();
    const leased = await Promise.all(leases);
    expect(new Set(leased.map((lease) => lease.record.sandboxId)).size).toBe(queued);
  });

  it("ends at startQueueTimeoutMs with a 503 that names it", async () => {
    const gate = gatedRuntime();
    const pool = burstPool({ startQueueTimeoutMs: 150 });
    const { manager } = poolManager([pool], gate.runtime, 1);
    const outcomes = Array.from({ length: queued }, () =>
      manager.lease(pool, HOLD).then(
        () => "served",
        (error: { code?: string; message: string }) => `${error.code}: ${error.message}`,
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 400));
    await gate.release();
    const refused = (await Promise.all(outcomes)).filter((outcome) => outcome !== "served");
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const outcome of refused) {
      expect(outcome).toMatch(/^capacity\.exhausted: .*startQueueTimeoutMs/);
    }
  });
});
