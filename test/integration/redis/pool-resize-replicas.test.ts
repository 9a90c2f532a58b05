/**
 * A pool resize through one replica is obeyed by the other: two gateways in this process,
 * sharing one Redis (a prefix of their own) and one Postgres schema, and one process runtime
 * (so neither replica's reconciliation takes the other's sandboxes for orphans). A third
 * replica started afterwards reads the resize back from the database. Every replica's pool
 * view shows the deployment's lease counts: the sum of each replica's own.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import { type RunningGateway, startGateway } from "../../../src/gateway/start-gateway.js";
import { InProcessJobRunner } from "../../../src/jobs/in-process-job-runner.js";
import { ProcessRuntime } from "../../../src/runtime/process/process-runtime.js";
import { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import { migrateToLatest } from "../../../src/store/sql/migrate.js";
import { resolvePython } from "../../support/cli.js";
import { ContractClient } from "../../support/contract-client.js";
import { TEST_IMAGE, TEST_SECRET, testAdminToken } from "../../support/gateway-harness.js";
import { redisAvailable, redisUrl } from "../../support/redis.js";
import { waitFor } from "../../support/wait-for.js";
import { type OpenedDatabase, openFreshPostgres, postgresAvailable } from "../store/databases.js";

const available = (await redisAvailable()) && postgresAvailable;
const prefix = `sandpool-test-${randomBytes(4).toString("hex")}:`;
const log = pino({ level: process.env.SANDPOOL_TEST_LOG ?? "silent" });
const config = gatewayConfigSchema.parse({
  host: "127.0.0.1",
  port: 0,
  auth: { jwtSecret: TEST_SECRET },
  policy: { allowedImages: [TEST_IMAGE], defaultImage: TEST_IMAGE, maxConcurrentSessions: 5 },
  pools: [{ name: "default", image: TEST_IMAGE, minIdle: 0, maxTotal: 2 }],
  // Reconciliation only at start-up: the test decides what runs.
  intervals: { warmMs: 100, reapMs: 100, reconcileMs: 600_000 },
});

interface Counts {
  warmLeases: number;
  coldLeases: number;
  warmupFailures: number;
}
interface PoolItem extends Counts {
  name: string;
  minIdle: number;
  maxTotal: number;
  effectiveMinIdle: number;
  warmHitRate: number | null;
  thisReplica: Counts;
}

describe.skipIf(!available)("pool resizes across replicas", () => {
  let database: OpenedDatabase;
  let root: string;
  let runtime: ProcessRuntime;
  const replicas: { gateway: RunningGateway; store: RedisCoordinationStore }[] = [];
  let adminToken: string;

  async function replica() {
    const store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    const gateway = await startGateway(
      config,
      { store, db: database.db, runtime, jobs: new InProcessJobRunner(log) },
      log,
    );
    replicas.push({ gateway, store });
    return gateway;
  }

  async function admin(gateway: RunningGateway, method: string, path: string, body?: unknown) {
    const res = await fetch(`${gateway.url}/admin/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${adminToken}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as unknown };
  }

  const poolOn = async (gateway: RunningGateway) =>
    ((await admin(gateway, "GET", "/pools")).body as { items: PoolItem[] }).items[0]!;

  async function openSession(gateway: RunningGateway, workspace: string) {
    const client = new ContractClient(
      gateway.url,
      await mintToken({ secret: TEST_SECRET, workspace, ttlSeconds: 600 }),
    );
    return client.createSession({});
  }

  beforeAll(async () => {
    database = await openFreshPostgres();
    await migrateToLatest(database.db);
    root = await mkdtemp(path.join(tmpdir(), "sandpool-replicas-"));
    runtime = new ProcessRuntime({
      rootDir: path.join(root, "sandboxes"),
      python: resolvePython(),
      execTimeoutCeilingSeconds: config.policy.execTimeoutCeilingSeconds,
      maxFileBytes: config.policy.maxFileBytes,
      log,
    });
    adminToken = await testAdminToken("operator");
  });
  afterAll(async () => {
    for (const [i, { gateway, store }] of replicas.entries()) {
      // The last one destroys what is left; the others just stop.
      await gateway.close({ destroySandboxes: i === replicas.length - 1 });
      await store.close();
    }
    await runtime?.close();
    await database?.close();
    if (root) await rm(root, { recursive: true, force: true });
    // Not every key expires by itself (the pools set does not).
    const redis = new Redis(redisUrl);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it("a resize through one replica is in force on the other within a second, and survives a restart", async () => {
    const one = await replica();
    const two = await replica();
    expect(await poolOn(two)).toMatchObject({ minIdle: 0, maxTotal: 2 });

    // Through replica one: at most one sandbox.
    const resized = await admin(one, "PATCH", "/pools/default", { maxTotal: 1 });
    expect(resized.status).toBe(200);
    // Within a second of the resize's answer (it is stored and announced before it answers).
    const started = Date.now();
    await waitFor(async () => (await poolOn(two)).maxTotal === 1, 1_000, "replica two sees maxTotal 1");
    expect(Date.now() - started).toBeLessThan(1_000);

    // Replica two obeys it: one session, and no room for a second (configured maxTotal is 2).
    const workspace = `team-${randomBytes(3).toString("hex")}`;
    const first = await openSession(two, workspace);
    expect(first.status).toBe(201);
    const second = await openSession(two, workspace);
    expect(second.status).toBe(503);
    expect((second.body as { detail: { code: string } }).detail.code).toBe("capacity.exhausted");

    // Raised through replica one again: replica two admits the second session.
    expect((await admin(one, "PATCH", "/pools/default", { maxTotal: 2 })).status).toBe(200);
    const raisedAt = Date.now();
    await waitFor(
      () => two.services.pools.sizeOf(config.pools[0]!).maxTotal === 2,
      1_000,
      "replica two sees maxTotal 2",
    );
    expect(Date.now() - raisedAt).toBeLessThan(1_000);
    expect((await openSession(two, workspace)).status).toBe(201);

    // A replica started later reads the resize from the database.
    expect((await admin(one, "PATCH", "/pools/default", { minIdle: 1 })).status).toBe(200);
    const three = await replica();
    expect(await poolOn(three)).toMatchObject({ minIdle: 1, maxTotal: 2 });
  });

  it("shows every replica the deployment's lease counts, the sum of each replica's own", async () => {
    expect(replicas.length).toBe(3);
    const [one, two, three] = replicas.map((r) => r.gateway) as [
      RunningGateway,
      RunningGateway,
      RunningGateway,
    ];
    const workspace = `count-${randomBytes(3).toString("hex")}`;
    // Sessions need room: maxTotal 2 and minIdle 1 were left by the test before.
    expect((await admin(one, "PATCH", "/pools/default", { minIdle: 0, maxTotal: 6 })).status).toBe(200);
    for (const replica of [one, three, three]) {
      const created = await openSession(replica, workspace);
      expect(created.status).toBe(201);
    }
    const views = async () => Promise.all([one, two, three].map(poolOn));
    const sum = (items: PoolItem[], key: keyof Counts) =>
      items.reduce((n, item) => n + item.thisReplica[key], 0);
    // Each replica exchanges its counts every second: within two, all agree.
    await waitFor(
      async () => {
        const items = await views();
        const leases = sum(items, "warmLeases") + sum(items, "coldLeases");
        return items.every((item) => item.warmLeases + item.coldLeases === leases);
      },
      3_000,
      "every replica shows the deployment's leases",
    );
    const items = await views();
    expect(sum(items, "warmLeases") + sum(items, "coldLeases")).toBeGreaterThanOrEqual(5);
    for (const item of items) {
      expect(item.warmLeases).toBe(sum(items, "warmLeases"));
      expect(item.coldLeases).toBe(sum(items, "coldLeases"));
      expect(item.effectiveMinIdle).toBeGreaterThanOrEqual(item.minIdle);
      expect(item.warmHitRate).toBe(item.warmLeases / (item.warmLeases + item.coldLeases));
    }
  });
});
