/**
 * `sandpool serve` on a Redis Cluster this file starts, configured as an operator would
 * (SANDPOOL_REDIS_CLUSTER_NODES): two replicas share the warm pool, the sessions, the
 * BullMQ jobs and the announcements (an API key revoked through one is refused by the
 * other at once), all through the Cluster.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import type { CliServer } from "../../support/cli.js";
import {
  type RedisClusterHandle,
  redisClusterToolsAvailable,
  startRedisCluster,
} from "../../support/redis-cluster.js";
import {
  createServeDeployment,
  SERVE_AUDIENCE,
  SERVE_SECRET,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { waitFor } from "../../support/wait-for.js";

const available = (await redisClusterToolsAvailable()) && (await serveStackAvailable({ redis: false }));

// An hour of API key cache: only the announcement can make a revocation visible in time.
const CONFIG = `
auth:
  apiKeyCacheSeconds: 3600
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 1
    maxTotal: 4
    coldStartTimeoutMs: 60000
intervals:
  warmMs: 500
  reapMs: 500
  reconcileMs: 1000
  orphanGraceMs: 70000
`;

describe.skipIf(!available)("sandpool serve on a Redis Cluster", () => {
  let cluster: RedisClusterHandle;
  let deployment: ServeDeployment;
  let one: CliServer;
  let two: CliServer;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    deployment = await createServeDeployment(CONFIG, { redis: cluster.target });
    [one, two] = await Promise.all([deployment.startReplica(), deployment.startReplica()]);
  }, 180_000);
  afterAll(async () => {
    await deployment?.close();
    await cluster?.stop();
  }, 120_000);

  it("keeps the warm pool in the cluster, and serves a session across replicas", async () => {
    const store = await deployment.store();
    await waitFor(async () => (await store.listIdle("default")).length >= 1, 90_000, "a warm sandbox");
    const created = await (await deployment.client(one, "team-c")).createSession();
    expect(created.status).toBe(201);
    const id = (created.body as { session_id: string }).session_id;
    expect(await store.getLease({ workspace: "team-c", sessionId: id })).toMatchObject({ sessionId: id });
    const other = await deployment.client(two, "team-c");
    expect((await other.run(id, "code_execution", { code: "print(6 * 7)" })).stdout).toBe("42\n");
    expect((await other.destroy(id)).status).toBe(204);
    expect(await store.getLease({ workspace: "team-c", sessionId: id })).toBeUndefined();
  });

  it("refuses on one replica, at once, an API key revoked through the other", async () => {
    const admin = await mintToken({
      secret: SERVE_SECRET,
      audience: SERVE_AUDIENCE,
      admin: true,
      subject: "ops",
    });
    const created = await fetch(`${one.url}/admin/v1/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      body: JSON.stringify({ workspace: "team-k" }),
    });
    expect(created.status).toBe(201);
    const { key, prefix } = (await created.json()) as { key: string; prefix: string };
    const statusOn = async (replica: CliServer) => {
      const res = await fetch(`${replica.url}/sessions/no-such-session`, {
        headers: { authorization: `Bearer ${key}` },
      });
      await res.text();
      return res.status;
    };
    expect(await statusOn(two)).toBe(404); // known, and now cached for the key cache's lifetime
    const revoked = await fetch(`${one.url}/admin/v1/keys/${prefix}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${admin}` },
    });
    expect(revoked.status).toBe(200);
    await waitFor(async () => (await statusOn(two)) === 401, 1_000, "the revocation on the other replica");
  });
});
