/**
 * How connections are made for each role and target, read from the clients' options (no
 * server is contacted: the clients are lazy, or closed at once, and every address is an
 * unused loopback port). The behaviour itself is
 * tested against real servers in test/integration/redis.
 */
import { Cluster, type Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import {
  describeRedisTarget,
  openRedis,
  type RedisRole,
  type RedisTarget,
} from "../../../src/store/coordination/redis/redis-connection.js";

const cluster: RedisTarget = {
  kind: "cluster",
  nodes: [{ host: "127.0.0.1", port: 1 }],
  password: "node-secret",
  tls: true,
};
const sentinel: RedisTarget = {
  kind: "sentinel",
  sentinels: [{ host: "127.0.0.1", port: 2 }],
  name: "mymaster",
  sentinelPassword: "sentinel-secret",
  password: "master-secret",
  tls: true,
};

function opened(target: RedisTarget, role: RedisRole) {
  const client = openRedis(target, role, { commandTimeoutMs: 750 });
  client.on("error", () => {});
  client.disconnect();
  return client;
}

describe("openRedis", () => {
  it("makes the store's connection fail fast: no offline queue, a command timeout", () => {
    const standalone = opened({ kind: "standalone", url: "redis://127.0.0.1:1" }, "commands") as Redis;
    expect(standalone.options).toMatchObject({
      enableOfflineQueue: false,
      commandTimeout: 750,
      maxRetriesPerRequest: 1,
    });
    const onCluster = opened(cluster, "commands") as Cluster;
    expect(onCluster).toBeInstanceOf(Cluster);
    expect(onCluster.options.enableOfflineQueue).toBe(false);
    expect(onCluster.options.redisOptions).toMatchObject({ commandTimeout: 750, maxRetriesPerRequest: 1 });
  });

  it("queues a subscriber's and BullMQ's commands while reconnecting, with no retry cap", () => {
    for (const role of ["subscriber", "jobs"] as const) {
      expect(
        (opened({ kind: "standalone", url: "redis://127.0.0.1:1" }, role) as Redis).options,
      ).toMatchObject({
        enableOfflineQueue: true,
        maxRetriesPerRequest: null,
      });
      const onCluster = opened(cluster, role) as Cluster;
      expect(onCluster.options.enableOfflineQueue).toBe(true);
      expect(onCluster.options.redisOptions).toMatchObject({ maxRetriesPerRequest: null });
    }
  });

  it("keeps TLS: rediss:// on one server, redis.tls on every Cluster node and Sentinel", () => {
    expect(
      (opened({ kind: "standalone", url: "rediss://127.0.0.1:1" }, "commands") as Redis).options.tls,
    ).toBeDefined();
    expect((opened(cluster, "commands") as Cluster).options.redisOptions?.tls).toEqual({});
    const viaSentinel = (opened(sentinel, "commands") as Redis).options;
    expect(viaSentinel).toMatchObject({ tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true });
  });

  it("gives the master's password to the master and the Sentinels' to the Sentinels", () => {
    expect((opened(sentinel, "commands") as Redis).options).toMatchObject({
      name: "mymaster",
      password: "master-secret",
      sentinelPassword: "sentinel-secret",
      sentinels: [{ host: "127.0.0.1", port: 2 }],
    });
    expect((opened(cluster, "jobs") as Cluster).options.redisOptions?.password).toBe("node-secret");
  });
});

describe("describeRedisTarget", () => {
  it("names the target and never a password", () => {
    expect(describeRedisTarget({ kind: "standalone", url: "redis://:pw@r:6379/0" })).toBe(
      "redis://:***@r:6379/0",
    );
    expect(describeRedisTarget({ ...cluster, nodes: [{ host: "redis-0", port: 6379 }] })).toBe(
      "cluster via redis-0:6379 (TLS)",
    );
    expect(describeRedisTarget({ ...sentinel, sentinels: [{ host: "s-1", port: 26379 }] })).toBe(
      "sentinel master 'mymaster' via s-1:26379 (TLS)",
    );
  });
});
