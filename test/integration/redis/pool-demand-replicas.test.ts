/**
 * Pool counts shared through real Redis: the exchange script (the store suite, its keys in
 * the pool's Cluster slot), and two replicas, each a PoolManager with its own connection and
 * its own PoolDemandSync, whose leases and failures add up on both, so that the replica that
 * leased nothing raises its effective minIdle from the other's demand.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import type { SandboxClient } from "../../../src/forward/sandbox-client.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import { PoolDemandSync } from "../../../src/pool/pool-demand-sync.js";
import { PoolManager } from "../../../src/pool/pool-manager.js";
import type { PoolSpec, SandboxRuntime } from "../../../src/runtime/sandbox-runtime.js";
import { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import { freshName } from "../../shared/coordination-store-suite.js";
import { describePoolDemandExchange } from "../../shared/pool-demand-store-suite.js";
import { redisAvailable, redisUrl } from "../../support/redis.js";

const available = await redisAvailable();
const prefix = `sandpool-test-${randomBytes(4).toString("hex")}:`;
const log = pino({ level: "silent" });
const opened: RedisCoordinationStore[] = [];

async function connect(): Promise<RedisCoordinationStore> {
  const store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
  opened.push(store);
  return store;
}

afterAll(async () => {
  for (const store of opened) await store.close();
  if (!available) return;
  const admin = new Redis(redisUrl);
  const keys = await admin.keys(`${prefix}*`);
  if (keys.length > 0) await admin.del(...keys);
  admin.disconnect();
});

/** A runtime whose starts take `startMs` (a refill time to measure) or fail with `fail`. */
function slowRuntime(startMs: number, fail?: string): SandboxRuntime {
  let n = 0;
  return {
    kind: "process",
    isolated: false,
    start: async () => {
      await sleep(startMs);
      if (fail) throw new Error(fail);
      return { runtimeId: `rt-${++n}`, endpoint: "http://127.0.0.1:9" };
    },
    destroy: async () => undefined,
    list: async () => [],
    close: async () => undefined,
  };
}

describe.skipIf(!available)("pool counts across replicas (Redis)", () => {
  describePoolDemandExchange("redis", async () => [await connect(), await connect()]);

  it("keeps a pool's counts in the pool's hash slot", async () => {
    const store = await connect();
    const pool = freshName("tagged");
    await store.exchangePoolDemand(
      pool,
      { warmLeases: 1, coldLeases: 0, warmupFailures: 0, refillMs: [5] },
      10,
    );
    const admin = new Redis(redisUrl);
    try {
      const keys = (await admin.keys(`${prefix}*${pool}*`)).sort();
      expect(keys).toEqual([`${prefix}{pool:${pool}}:demand`, `${prefix}{pool:${pool}}:refills`]);
      expect(await admin.pttl(keys[0]!)).toBeGreaterThan(86_400_000);
    } finally {
      admin.disconnect();
    }
  });

  it("adds two replicas' leases and failures, and both follow the deployment's demand", async () => {
    const spec: PoolSpec = {
      name: freshName("shared"),
      image: "img",
      resourceClass: "standard",
      minIdle: 0,
      maxTotal: 100,
      warmupConcurrency: 2,
      coldStartTimeoutMs: 5_000,
    };
    let clock = 1_000_000;
    const now = () => clock;
    /** What a lease holds its sandbox's place for: a workspace, until long after the test. */
    const hold = () => ({ workspace: "w", until: clock + 3_600_000, now: clock });
    const replica = async (runtime: SandboxRuntime) => {
      const store = await connect();
      const metrics = new GatewayMetrics({ processMetrics: false });
      const pools = new PoolManager({
        pools: [spec],
        store,
        runtime,
        client: { createInnerSession: async () => "inner" } as unknown as SandboxClient,
        metrics,
        log,
        now,
      });
      const sync = new PoolDemandSync(pools, store, metrics, log, 60_000, now);
      return { pools, store, sync, metrics };
    };
    const one = await replica(slowRuntime(300));
    const two = await replica(slowRuntime(300));
    await one.sync.syncNow(); // the baselines
    await two.sync.syncNow();

    // Replica one: 40 cold leases (each a 300 ms refill), then 2 warm ones from sandboxes it pushed.
    await Promise.all(Array.from({ length: 40 }, () => one.pools.lease(spec, hold())));
    for (const record of (
      await Promise.all([one.pools.lease(spec, hold()), one.pools.lease(spec, hold())])
    ).map((l) => l.record))
      await one.store.pushIdle(record);
    // Replica two: 2 warm leases (the two idle ones), then a cold one; replica three fails a start.
    await two.pools.lease(spec, hold());
    await two.pools.lease(spec, hold());
    await two.pools.lease(spec, hold());
    const broken = await replica(slowRuntime(1, "no such image"));
    clock += 500; // after the others' successful starts
    await expect(broken.pools.lease(spec, hold())).rejects.toMatchObject({ code: "capacity.exhausted" });

    clock += 1_500;
    await one.sync.syncNow();
    await two.sync.syncNow();
    await broken.sync.syncNow();
    // A second round: the first ones to exchange now read the others' counts too.
    await one.sync.syncNow();
    await two.sync.syncNow();

    const expected = { warmLeases: 2, coldLeases: 43, warmupFailures: 1 };
    for (const [i, r] of [one, two, broken].entries())
      expect(r.pools.demand.deploymentOf(spec.name), `replica ${i}`).toMatchObject(expected);
    expect(one.pools.demand.countersOf(spec.name)).toEqual({
      warmLeases: 0,
      coldLeases: 42,
      warmupFailures: 0,
      reusedLeases: 0,
    });
    expect(two.pools.demand.countersOf(spec.name)).toEqual({
      warmLeases: 2,
      coldLeases: 1,
      warmupFailures: 0,
      reusedLeases: 0,
    });
    // Exchanged counts are not sent twice.
    await two.sync.syncNow();
    expect(two.pools.demand.deploymentOf(spec.name)).toMatchObject(expected);

    // The failure is shared with its reason; a later success anywhere clears it.
    expect(one.pools.demand.deploymentOf(spec.name)?.startFailure).toMatchObject({
      message: "no such image",
    });
    expect(one.pools.startFailureOf(spec.name)).toMatchObject({ message: "no such image" });

    // Replica two leased 3 but sees the deployment's 45 over 2 s: its demand rises with one's.
    const demandOfTwo = two.pools.demand.demandOf(spec.name)!;
    expect(demandOfTwo.leasesPerSecond).toBeGreaterThan(0.5);
    expect(demandOfTwo.refillSecondsP95).toBeGreaterThanOrEqual(0.3);
    expect(two.pools.effectiveMinIdle(spec)).toBeGreaterThanOrEqual(1);
    expect(two.pools.effectiveMinIdle(spec)).toBe(one.pools.effectiveMinIdle(spec));
    const gauge = await two.metrics.poolEffectiveMinIdle.get();
    expect(gauge.values.find((v) => v.labels.pool === spec.name)?.value).toBe(
      two.pools.effectiveMinIdle(spec),
    );
    const ratio = await two.metrics.poolWarmHitRatio.get();
    expect(ratio.values.find((v) => v.labels.pool === spec.name)?.value).toBeCloseTo(2 / 45, 6);

    clock += 1_000;
    await one.pools.lease(spec, hold()); // a success after the failure
    await one.sync.syncNow();
    expect(one.pools.demand.deploymentOf(spec.name)?.startFailure).toBeNull();
  });
});
