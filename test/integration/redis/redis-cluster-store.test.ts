/**
 * The Redis coordination store on a real Redis Cluster this file starts (three masters on
 * loopback ports): the shared conformance suite, so a script whose keys span two slots
 * fails here with CROSSSLOT, plus what only a Cluster can show (keys spread over masters,
 * SCAN over every master, pub/sub between replicas, Redis away failing fast).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scanKeys } from "../../../src/store/coordination/redis/redis-connection.js";
import { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import { describeCoordinationStore, freshName } from "../../shared/coordination-store-suite.js";
import { describeCpuCharging } from "../../shared/cpu-charge-store-suite.js";
import {
  type RedisClusterHandle,
  redisClusterToolsAvailable,
  startRedisCluster,
} from "../../support/redis-cluster.js";
import { waitFor } from "../../support/wait-for.js";

const available = await redisClusterToolsAvailable();
const prefix = `sandpool-test-${randomBytes(4).toString("hex")}:`;

describe.skipIf(!available)("Redis coordination store on a Redis Cluster", () => {
  let cluster: RedisClusterHandle;
  const connect = (keyPrefix = prefix) =>
    RedisCoordinationStore.connect({ target: cluster.target, prefix: keyPrefix });

  beforeAll(async () => {
    cluster = await startRedisCluster();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  describeCoordinationStore("redis cluster", async () => {
    const store = await connect();
    return { store, close: () => store.close() };
  });
  describeCpuCharging("redis cluster", async () => {
    const store = await connect();
    return { store, close: () => store.close() };
  });

  it("really is a cluster: it refuses a script whose keys are in two slots", async () => {
    const admin = cluster.admin();
    try {
      await expect(
        admin.eval("return redis.call('GET', KEYS[1])", 2, `${prefix}{ws:a}:x`, `${prefix}{ws:b}:x`),
      ).rejects.toThrow(/CROSSSLOT/);
    } finally {
      admin.disconnect();
    }
  });

  it("spreads workspaces over the masters, and SCAN through scanKeys finds every key", async () => {
    const own = `${prefix}scan:`; // the suite's slots use the shared prefix
    const store = await connect(own);
    const admin = cluster.admin();
    try {
      const now = Date.now();
      const workspaces = Array.from({ length: 24 }, () => freshName("ws"));
      for (const workspace of workspaces) await store.acquireSlot(workspace, "t", 5, now + 60_000, now);
      await admin.connect().catch(() => {}); // already connecting: nodes() needs it ready
      await waitFor(() => admin.status === "ready", 10_000, "the admin client");
      const perMaster = await Promise.all(
        admin.nodes("master").map((master) => master.keys(`${own}{ws:*}:slots`)),
      );
      // 24 random workspaces on 3 masters all landing on one is a one-in-3^23 chance.
      expect(perMaster.filter((keys) => keys.length > 0).length).toBeGreaterThan(1);
      const found = await scanKeys(admin, `${own}{ws:*}:slots`, 5);
      expect(found.sort()).toEqual(workspaces.map((workspace) => `${own}{ws:${workspace}}:slots`).sort());
    } finally {
      admin.disconnect();
      await store.close();
    }
  });

  it("delivers a message published through one replica's store to another's, over the cluster", async () => {
    const publisher = await connect();
    const subscriber = await connect();
    try {
      const channel = freshName("channel");
      const received: string[] = [];
      await subscriber.subscribe(channel, (message) => received.push(message));
      await publisher.publish(channel, "revoked:abc");
      await waitFor(() => received.length === 1, 5_000, "the message on the other store");
      expect(received).toEqual(["revoked:abc"]);
    } finally {
      await publisher.close();
      await subscriber.close();
    }
  });

  // Last: it takes the whole cluster down and back up (empty).
  it("fails fast with store.unavailable while the cluster is away, and recovers by itself", async () => {
    const store = await connect();
    const listener = await connect();
    try {
      const channel = freshName("channel");
      const received: string[] = [];
      await listener.subscribe(channel, (message) => received.push(message));
      const now = Date.now();
      expect(await store.acquireSlot("w-away", "a", 5, now + 60_000, now)).toBe(true);
      await cluster.kill();
      const started = Date.now();
      await expect(store.acquireSlot("w-away", "b", 5, now + 60_000, now)).rejects.toMatchObject({
        code: "store.unavailable",
        status: 503,
      });
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(await store.ping()).toBe(false);
      await cluster.start();
      await waitFor(() => store.ping(), 20_000, "the store to see the cluster again");
      expect(await store.acquireSlot("w-away", "c", 5, now + 60_000, now)).toBe(true);
      // The subscription is back too: announcements reach a replica after the outage.
      await waitFor(
        async () => {
          await store.publish(channel, "after");
          return received.includes("after");
        },
        20_000,
        "a message on the subscription made before the outage",
      );
    } finally {
      await store.close();
      await listener.close();
    }
  });
});
