import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import { describeCoordinationStore } from "../../shared/coordination-store-suite.js";
import { describeCpuCharging } from "../../shared/cpu-charge-store-suite.js";
import { redisAvailable, redisUrl, startPrivateRedis } from "../../support/redis.js";
import { waitFor } from "../../support/sandbox-server.js";

const available = await redisAvailable();
// One key prefix per run: the suite's names are fresh anyway; this keeps cleanup exact.
const prefix = `sandpool-test-${randomBytes(4).toString("hex")}:`;

afterAll(async () => {
  if (!available) return;
  const admin = new Redis(redisUrl);
  const keys = await admin.keys(`${prefix}*`);
  if (keys.length > 0) await admin.del(...keys);
  admin.disconnect();
});

describe.skipIf(!available)("Redis coordination store", () => {
  describeCoordinationStore("redis", async () => {
    const store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    return { store, close: () => store.close() };
  });
  describeCpuCharging("redis", async () => {
    const store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    return { store, close: () => store.close() };
  });

  it("hash-tags every key of a workspace into one Cluster slot", async () => {
    const store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    const admin = new Redis(redisUrl);
    try {
      const now = Date.now();
      await store.acquireSlot("ws-tag", "a", 5, now + 60_000, now);
      await store.takeRate("ws-tag", 5, 60_000, now);
      await store.reserveBudget("ws-tag", "2026-01-01", 10, 1_000);
      const keys = await admin.keys(`${prefix}{ws:ws-tag}*`);
      expect(keys.sort()).toEqual([
        `${prefix}{ws:ws-tag}:budget:2026-01-01`,
        `${prefix}{ws:ws-tag}:rate`,
        `${prefix}{ws:ws-tag}:slots`,
      ]);
    } finally {
      admin.disconnect();
      await store.close();
    }
  });

  it("keeps a day's budget counter for two days, refunds included", async () => {
    const store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    const admin = new Redis(redisUrl);
    try {
      const key = `${prefix}{ws:ws-ttl}:budget:2026-01-02`;
      await store.reserveBudget("ws-ttl", "2026-01-02", 1_000, 5_000);
      const ttl = await admin.pttl(key);
      expect(ttl).toBeGreaterThan(86_400_000);
      expect(ttl).toBeLessThanOrEqual(2 * 86_400_000);
      await store.refundBudget("ws-ttl", "2026-01-02", 400);
      expect(await admin.get(key)).toBe("600");
      expect(await admin.pttl(key)).toBeGreaterThan(86_400_000);
    } finally {
      admin.disconnect();
      await store.close();
    }
  });

  it("refuses to start against a Redis it cannot reach, naming it", async () => {
    await expect(RedisCoordinationStore.connect({ url: "redis://127.0.0.1:1", prefix })).rejects.toThrow(
      /cannot reach Redis at redis:\/\/127\.0\.0\.1:1/,
    );
  });

  it("fails fast with store.unavailable while Redis is away, and recovers by itself", async () => {
    // A private Redis on a free loopback port, so stopping it disturbs no one else.
    const server = await startPrivateRedis();
    const store = await RedisCoordinationStore.connect({ url: server.url, prefix });
    try {
      const now = Date.now();
      expect(await store.acquireSlot("w", "a", 5, now + 60_000, now)).toBe(true);
      await server.stop();
      const started = Date.now();
      await expect(store.acquireSlot("w", "b", 5, now + 60_000, now)).rejects.toMatchObject({
        code: "store.unavailable",
        status: 503,
      });
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(await store.ping()).toBe(false);
      await server.start();
      await waitFor(() => store.ping(), 10_000);
      expect(await store.acquireSlot("w", "c", 5, now + 60_000, now)).toBe(true);
    } finally {
      await store.close();
      await server.stop();
    }
  });

  it("tries a read once more when Redis answers late, but never a write", async () => {
    // A private Redis, paused a little longer than the command timeout: the first try of a
    // read times out, the second is answered once the pause ends; a script fails.
    const server = await startPrivateRedis();
    const store = await RedisCoordinationStore.connect({ url: server.url, prefix, commandTimeoutMs: 500 });
    const admin = new Redis(server.url);
    try {
      const now = Date.now();
      const l = {
        sessionId: "s-late",
        workspace: "w-late",
        pool: "default",
        image: "sandpool/sandbox:dev",
        sandbox: {
          sandboxId: "sb",
          pool: "default",
          endpoint: "http://127.0.0.1:1",
          runtimeId: "rt",
          innerSessionId: "in",
          createdAt: now,
        },
        createdAt: now,
        lastActivityAt: now,
        idleTimeoutSeconds: 60,
        maxLifetimeSeconds: 600,
      };
      await store.putLease(l);
      await admin.client("PAUSE", 700, "ALL");
      const [read, written] = await Promise.allSettled([
        store.getLease({ workspace: "w-late", sessionId: "s-late" }),
        store.acquireSlot("w-late", "a", 5, now + 60_000, now),
      ]);
      expect(read).toMatchObject({ status: "fulfilled", value: l });
      expect(written).toMatchObject({ status: "rejected", reason: { code: "store.unavailable" } });
    } finally {
      admin.disconnect();
      await store.close();
      await server.stop();
    }
  });

  it("still reaps, lists and cleans leases an earlier version indexed in its one global set", async () => {
    const legacyPrefix = `${prefix}legacy-${randomBytes(3).toString("hex")}:`;
    const store = await RedisCoordinationStore.connect({ url: redisUrl, prefix: legacyPrefix });
    const admin = new Redis(redisUrl);
    try {
      const now = Date.now();
      const lease = {
        sessionId: "old-session",
        workspace: "old-ws",
        pool: "default",
        image: "sandpool/sandbox:dev",
        sandbox: {
          sandboxId: "sb-old",
          pool: "default",
          endpoint: "http://127.0.0.1:1",
          runtimeId: "rt",
          innerSessionId: "in",
          createdAt: now - 120_000,
        },
        createdAt: now - 120_000,
        lastActivityAt: now - 120_000,
        idleTimeoutSeconds: 60,
        maxLifetimeSeconds: 600,
      };
      // As the previous version wrote it: the lease key, and a member in {leases}:deadlines.
      await admin.set(`${legacyPrefix}{ws:old-ws}:lease:old-session`, JSON.stringify(lease), "PX", 600_000);
      const member = JSON.stringify(["old-ws", "old-session"]);
      await admin.zadd(`${legacyPrefix}{leases}:deadlines`, now - 60_000, member);
      expect(await store.dueLeases(now, 10)).toEqual([{ workspace: "old-ws", sessionId: "old-session" }]);
      expect(await store.listLeases()).toEqual([lease]);
      // Which replicas cached it, that version did not record: any may have.
      expect(await store.takeLease({ workspace: "old-ws", sessionId: "old-session" })).toEqual({
        ...lease,
        copiedElsewhere: true,
      });
      expect(await admin.zcard(`${legacyPrefix}{leases}:deadlines`)).toBe(0);
      expect(await store.dueLeases(now, 10)).toEqual([]);
    } finally {
      const keys = await admin.keys(`${legacyPrefix}*`);
      if (keys.length > 0) await admin.del(...keys);
      admin.disconnect();
      await store.close();
    }
  });
});
