/**
 * The store's Redis client (coalescing-redis.ts) holds the commands of one event-loop turn
 * in its socket (corked) and sends them together once the turn's callbacks have run, each
 * reply going to its own command; against the real server. A write Node makes at once
 * leaves the socket's buffer empty (`writableLength`), so what is held is plain to see.
 */
import { randomBytes } from "node:crypto";
import { Redis, type Result } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoalescingRedis } from "../../../src/store/coordination/redis/coalescing-redis.js";
import { redisAvailable, redisUrl } from "../../support/redis.js";

const available = await redisAvailable();
const prefix = `sandpool-test-coalesce-${randomBytes(4).toString("hex")}:`;
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe.skipIf(!available)("CoalescingRedis", () => {
  let client: CoalescingRedis;

  beforeAll(async () => {
    client = new CoalescingRedis(redisUrl, { lazyConnect: true, enableOfflineQueue: false });
    client.defineCommand("sandpoolTestEcho", { numberOfKeys: 1, lua: "return {KEYS[1], ARGV[1]}" });
    await client.connect();
    await client.ping();
  });

  afterAll(async () => {
    if (!available) return;
    await client.quit();
    const admin = new Redis(redisUrl);
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(...keys);
    admin.disconnect();
  });

  it("holds the commands of one turn until it ends, then sends them together, each answered in order", async () => {
    const sent = [
      client.set(`${prefix}a`, "1"),
      client.incr(`${prefix}n`),
      client.sandpoolTestEcho(`${prefix}k`, "v"),
      client.get(`${prefix}a`),
      client.incr(`${prefix}n`),
    ];
    expect(client.stream.writableCorked).toBe(1);
    expect(client.stream.writableLength).toBeGreaterThan(0);
    await nextTurn();
    expect(client.stream.writableCorked).toBe(0);
    expect(client.stream.writableLength).toBe(0);
    expect(await Promise.all(sent)).toEqual(["OK", 1, [`${prefix}k`, "v"], "1", 2]);
  });

  it("corks again in a later turn", async () => {
    expect(await client.incr(`${prefix}m`)).toBe(1);
    const second = client.incr(`${prefix}m`);
    expect(client.stream.writableCorked).toBe(1);
    expect(await second).toBe(2);
    expect(client.stream.writableCorked).toBe(0);
  });

  it("fails a command as ioredis does when the connection is gone, and leaves none corked", async () => {
    const other = new CoalescingRedis(redisUrl, { lazyConnect: true, enableOfflineQueue: false });
    await other.connect();
    await other.ping();
    other.disconnect();
    await expect(other.get(`${prefix}a`)).rejects.toThrow();
    expect(await client.get(`${prefix}a`)).toBe("1");
  });
});

declare module "ioredis" {
  interface RedisCommander<Context> {
    sandpoolTestEcho(key: string, value: string): Result<[string, string], Context>;
  }
}
