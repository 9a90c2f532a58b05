/**
 * Two gateways sharing one Redis coordination store and one Postgres database, as two serve
 * replicas do: a key created through one works on both; revoked through one, the other
 * refuses it within a second, although its key cache would keep it for an hour.
 */

import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
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
import { redisAvailable, redisUrl } from "../../support/redis.js";
import { type OpenedDatabase, openFreshPostgres, postgresAvailable } from "../store/databases.js";

const available = (await redisAvailable()) && postgresAvailable;
const SECRET = "replica-test-secret-of-at-least-32-bytes!";
const IMAGE = "sandpool/sandbox:dev";

describe.skipIf(!available)("API key revocation across replicas", () => {
  let database: OpenedDatabase;
  let root: string;
  const replicas: { gateway: RunningGateway; close(): Promise<void> }[] = [];
  const prefix = `sandpool-test-${randomBytes(4).toString("hex")}:`;

  async function replica(): Promise<RunningGateway> {
    const log = pino({ level: process.env.SANDPOOL_TEST_LOG ?? "silent" });
    const config = gatewayConfigSchema.parse({
      host: "127.0.0.1",
      port: 0,
      // An hour of key cache: only the announcement can make the revocation visible in time.
      auth: { jwtSecret: SECRET, apiKeyCacheSeconds: 3600 },
      policy: { allowedImages: [IMAGE], defaultImage: IMAGE },
      pools: [{ name: "default", image: IMAGE, minIdle: 0, maxTotal: 1 }],
    });
    const store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    const runtime = new ProcessRuntime({
      rootDir: path.join(root, `r${replicas.length}`),
      python: resolvePython(),
      execTimeoutCeilingSeconds: config.policy.execTimeoutCeilingSeconds,
      maxFileBytes: config.policy.maxFileBytes,
      log,
    });
    const gateway = await startGateway(
      config,
      { store, db: database.db, runtime, jobs: new InProcessJobRunner(log) },
      log,
    );
    replicas.push({
      gateway,
      close: async () => {
        await gateway.close();
        await runtime.close();
        await store.close();
      },
    });
    return gateway;
  }

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), "sandpool-replicas-"));
    database = await openFreshPostgres();
    await migrateToLatest(database.db);
  });
  afterAll(async () => {
    for (const one of replicas) await one.close();
    await database?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** The status a contract call with `key` gets from `gateway` (404: authenticated, no such session). */
  async function statusWith(gateway: RunningGateway, key: string): Promise<number> {
    const res = await fetch(`${gateway.url}/sessions/no-such-session`, {
      headers: { authorization: `Bearer ${key}` },
    });
    await res.text();
    return res.status;
  }

  it("a key revoked through one replica is refused by the other within a second", async () => {
    const one = await replica();
    const two = await replica();
    const admin = await mintToken({ secret: SECRET, admin: true, subject: "ops" });
    const created = await fetch(`${one.url}/admin/v1/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      body: JSON.stringify({ workspace: "team-r" }),
    });
    expect(created.status).toBe(201);
    const { key, prefix: keyPrefix } = (await created.json()) as { key: string; prefix: string };
    // Both replicas know (and have cached) the key.
    expect(await statusWith(one, key)).toBe(404);
    expect(await statusWith(two, key)).toBe(404);

    const revoked = await fetch(`${one.url}/admin/v1/keys/${keyPrefix}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${admin}` },
    });
    expect(revoked.status).toBe(200);
    const started = Date.now();
    let status = await statusWith(two, key);
    while (status !== 401 && Date.now() - started < 1_000) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      status = await statusWith(two, key);
    }
    expect(status).toBe(401);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await statusWith(one, key)).toBe(401);
  });
});
