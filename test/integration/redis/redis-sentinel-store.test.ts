/**
 * The Redis coordination store and the BullMQ runner through a Sentinel this file starts
 * (one password-protected master, one password-protected Sentinel, on loopback ports): the
 * client asks the Sentinel where the master is and works on it.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BullmqJobRunner } from "../../../src/jobs/bullmq-job-runner.js";
import { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import { describeCoordinationStore } from "../../shared/coordination-store-suite.js";
import { redisClusterToolsAvailable } from "../../support/redis-cluster.js";
import { type RedisSentinelHandle, startRedisSentinel } from "../../support/redis-sentinel.js";
import { waitFor } from "../../support/wait-for.js";

const available = await redisClusterToolsAvailable(); // the same binaries: redis-server
const prefix = `sandpool-test-${randomBytes(4).toString("hex")}:`;

describe.skipIf(!available)("Redis coordination store through a Sentinel", () => {
  let sentinel: RedisSentinelHandle;

  beforeAll(async () => {
    sentinel = await startRedisSentinel();
  });
  afterAll(async () => {
    await sentinel?.stop();
  });

  describeCoordinationStore("redis sentinel", async () => {
    const store = await RedisCoordinationStore.connect({ target: sentinel.target, prefix });
    return { store, close: () => store.close() };
  });

  it("writes on the master the Sentinel names", async () => {
    const store = await RedisCoordinationStore.connect({ target: sentinel.target, prefix });
    const master = new Redis({
      host: "127.0.0.1",
      port: await sentinel.masterPort(),
      password: sentinel.masterPassword,
    });
    try {
      const now = Date.now();
      await store.acquireSlot("ws-sentinel", "a", 5, now + 60_000, now);
      expect(await master.zcard(`${prefix}{ws:ws-sentinel}:slots`)).toBe(1);
    } finally {
      master.disconnect();
      await store.close();
    }
  });

  it("refuses to start with a wrong Sentinel password, naming the master and the Sentinel", async () => {
    const target = { ...sentinel.target, sentinelPassword: "not-the-sentinel-password" };
    const refused = RedisCoordinationStore.connect({ target, prefix, startupTimeoutMs: 2_000 });
    await expect(refused).rejects.toThrow(
      /cannot reach Redis at sentinel master 'sandpool-test-master' via 127\.0\.0\.1:\d+/,
    );
    await expect(refused).rejects.not.toThrow(/not-the-sentinel-password/);
  });

  it("runs BullMQ jobs through the Sentinel", async () => {
    const runner = new BullmqJobRunner(
      { target: sentinel.target, queueName: `test-${randomBytes(5).toString("hex")}` },
      pino({ level: "silent" }),
    );
    const seen: unknown[] = [];
    try {
      runner.register("note", async (payload) => {
        seen.push(payload);
      });
      await runner.start();
      await runner.enqueue("note", { n: 1 });
      await waitFor(() => seen.length === 1, 10_000, "the job");
      expect(seen).toEqual([{ n: 1 }]);
    } finally {
      await runner.close();
    }
  });

  // Last: it fails the master over to the replica.
  it("follows a failover: fails fast while the master is gone, then works on the promoted replica", async () => {
    const store = await RedisCoordinationStore.connect({ target: sentinel.target, prefix });
    try {
      const before = await sentinel.masterPort();
      const now = Date.now();
      expect(await store.acquireSlot("ws-failover", "a", 5, now + 60_000, now)).toBe(true);
      await sentinel.killMaster();
      await expect(store.acquireSlot("ws-failover", "b", 5, now + 60_000, now)).rejects.toMatchObject({
        code: "store.unavailable",
      });
      await waitFor(
        async () => (await sentinel.masterPort().catch(() => before)) !== before,
        30_000,
        "a new master",
      );
      await waitFor(() => store.ping(), 20_000, "the store on the new master");
      expect(await store.acquireSlot("ws-failover", "c", 5, now + 60_000, now)).toBe(true);
      expect(await sentinel.masterPort()).not.toBe(before);
    } finally {
      await store.close();
    }
  }, 60_000);
});
