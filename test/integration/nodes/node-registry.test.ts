/** The node registry on a real Redis: heartbeats, states, drain, and the one-claimer loss. */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type NodeAdvert, NodeRegistry } from "../../../src/roles/shared/node-registry.js";
import { loadLuaScripts } from "../../../src/store/coordination/redis/lua-scripts.js";
import {
  connectRedis,
  openRedis,
  type RedisClient,
} from "../../../src/store/coordination/redis/redis-connection.js";
import { redisAvailable, redisUrl } from "../../support/redis.js";
import {
  type RedisClusterHandle,
  redisClusterToolsAvailable,
  startRedisCluster,
} from "../../support/redis-cluster.js";

const available = await redisAvailable();
const clusterAvailable = await redisClusterToolsAvailable();
const LOST_AFTER = 10_000;
const T = 1_800_000_000_000;

function advert(id: string, extra: Partial<NodeAdvert> = {}): NodeAdvert {
  return {
    id,
    url: `http://10.0.0.${id.length}:8091`,
    capacity: { default: 4 },
    images: ["sandpool/sandbox:dev"],
    freeWarm: { default: 2 },
    leased: 1,
    ...extra,
  };
}

function registrySuite(open: () => Promise<{ redis: RedisClient; close: () => Promise<void> }>) {
  let redis: RedisClient;
  let close: () => Promise<void>;
  let registry: NodeRegistry;
  let other: NodeRegistry;
  const prefix = `sandpool-test:${randomUUID()}:`;

  beforeAll(async () => {
    ({ redis, close } = await open());
    const scripts = await loadLuaScripts();
    registry = new NodeRegistry(redis, scripts, { prefix, lostAfterMs: LOST_AFTER });
    other = new NodeRegistry(redis, scripts, { prefix, lostAfterMs: LOST_AFTER });
  });
  afterAll(async () => {
    await registry.forget("node-a");
    await registry.forget("node-c");
    await close();
  }, 60_000);

  it("lists what each node advertised, ready until it stops heart-beating", async () => {
    expect(await registry.heartbeat(advert("node-a"), T)).toEqual({ draining: false });
    await registry.heartbeat(advert("node-b", { freeWarm: { default: 0 } }), T);
    const listed = await other.list(T + 1_000);
    expect(listed.map((node) => [node.id, node.state, node.freeWarm.default])).toEqual([
      ["node-a", "ready", 2],
      ["node-b", "ready", 0],
    ]);
    expect(listed[0]).toMatchObject({ url: advert("node-a").url, capacity: { default: 4 }, heartbeatAt: T });
    expect((await other.list(T + LOST_AFTER + 1)).map((node) => node.state)).toEqual(["lost", "lost"]);
  });

  it("keeps an operator's drain across heartbeats, tells the node, and clears it on undrain", async () => {
    expect(await registry.setDraining("node-a", true)).toBe(true);
    expect(await registry.heartbeat(advert("node-a"), T + 2_000)).toEqual({ draining: true });
    expect((await other.get("node-a", T + 2_000))?.state).toBe("draining");
    expect(await registry.setDraining("node-a", false)).toBe(true);
    expect(await registry.heartbeat(advert("node-a"), T + 2_500)).toEqual({ draining: false });
    expect(await registry.setDraining("no-such-node", true)).toBe(false);
  });

  it("lets exactly one edge claim a lost node, none a live one, and again after it returns and is lost", async () => {
    await registry.heartbeat(advert("node-c"), T);
    expect(await registry.claimLost("node-c", T + 1_000)).toBe(false);
    const claims = await Promise.all([
      registry.claimLost("node-c", T + LOST_AFTER + 1),
      other.claimLost("node-c", T + LOST_AFTER + 1),
      other.claimLost("node-c", T + LOST_AFTER + 2),
    ]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    // Back, then silent again: a new loss, claimable once more.
    await registry.heartbeat(advert("node-c"), T + 20_000);
    expect(await other.claimLost("node-c", T + 20_000 + LOST_AFTER + 1)).toBe(true);
    expect(await registry.claimLost("node-c", T + 20_000 + LOST_AFTER + 2)).toBe(false);
  });

  it("forgets a node entirely", async () => {
    await registry.forget("node-b");
    expect((await other.list(T)).map((node) => node.id)).not.toContain("node-b");
  });
}

describe.skipIf(!available)("node registry (Redis)", () => {
  registrySuite(async () => {
    const redis = new Redis(redisUrl);
    return { redis, close: async () => redis.disconnect() };
  });
});

// Every key of the registry shares the {nodes} tag: one slot, so MULTI and the script work.
describe.skipIf(!clusterAvailable)("node registry (Redis Cluster)", () => {
  let cluster: RedisClusterHandle;
  registrySuite(async () => {
    cluster = await startRedisCluster();
    const redis = openRedis(cluster.target, "commands");
    await connectRedis(redis, cluster.target);
    return {
      redis,
      close: async () => {
        redis.disconnect();
        await cluster.stop();
      },
    };
  });
});
