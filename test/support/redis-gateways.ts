/**
 * Gateways as `sandpool serve` assembles them (Redis coordination store, Postgres), in this
 * process, for the tests of the production hot path: any number of replicas sharing one
 * Redis key prefix, one fresh Postgres schema and one process runtime (real sandbox servers
 * on loopback, cheap to start; shared so that no replica's reconciliation takes another's
 * sandboxes for orphans). Jobs run in-process (the BullMQ queue is not what these tests
 * measure). Closing removes the prefix's keys, the schema and every sandbox.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { pino } from "pino";
import { mintToken } from "../../src/auth/dev-keys.js";
import { type GatewayConfigInput, gatewayConfigSchema } from "../../src/config/gateway-config.js";
import { type RunningGateway, startGateway } from "../../src/gateway/start-gateway.js";
import { InProcessJobRunner } from "../../src/jobs/in-process-job-runner.js";
import { ProcessRuntime } from "../../src/runtime/process/process-runtime.js";
import { RedisCoordinationStore } from "../../src/store/coordination/redis/redis-store.js";
import { migrateToLatest } from "../../src/store/sql/migrate.js";
import { type OpenedDatabase, openFreshPostgres } from "../integration/store/databases.js";
import { resolvePython } from "./cli.js";
import { ContractClient } from "./contract-client.js";
import { TEST_IMAGE, TEST_SECRET } from "./gateway-harness.js";
import { redisUrl } from "./redis.js";

export interface RedisReplica {
  gateway: RunningGateway;
  store: RedisCoordinationStore;
  url: string;
  client(workspace: string): Promise<ContractClient>;
}

export interface RedisDeployment {
  /** The Redis key prefix of every key the replicas write. */
  prefix: string;
  /** The runtime every replica shares: what it lists is every sandbox the deployment started. */
  runtime: ProcessRuntime;
  startReplica(): Promise<RedisReplica>;
  close(): Promise<void>;
}

export async function createRedisDeployment(
  overrides: Partial<GatewayConfigInput> = {},
): Promise<RedisDeployment> {
  const prefix = `sandpool-test-${randomBytes(4).toString("hex")}:`;
  const log = pino({ level: process.env.SANDPOOL_TEST_LOG ?? "silent" });
  const config = gatewayConfigSchema.parse({
    host: "127.0.0.1",
    port: 0,
    auth: { jwtSecret: TEST_SECRET },
    policy: { allowedImages: [TEST_IMAGE], defaultImage: TEST_IMAGE },
    pools: [{ name: "default", image: TEST_IMAGE, minIdle: 1, maxTotal: 6 }],
    ...overrides,
  });
  const database: OpenedDatabase = await openFreshPostgres();
  await migrateToLatest(database.db);
  const root = await mkdtemp(path.join(tmpdir(), "sandpool-redis-gateways-"));
  const runtime = new ProcessRuntime({
    rootDir: path.join(root, "sandboxes"),
    python: resolvePython(),
    execTimeoutCeilingSeconds: config.policy.execTimeoutCeilingSeconds,
    maxFileBytes: config.policy.maxFileBytes,
    log,
  });
  const replicas: RedisReplica[] = [];

  return {
    prefix,
    runtime,
    async startReplica() {
      const store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
      const gateway = await startGateway(
        config,
        { store, db: database.db, runtime, jobs: new InProcessJobRunner(log) },
        log,
      );
      const replica: RedisReplica = {
        gateway,
        store,
        url: gateway.url,
        client: async (workspace) =>
          new ContractClient(
            gateway.url,
            await mintToken({ secret: TEST_SECRET, workspace, ttlSeconds: 600 }),
          ),
      };
      replicas.push(replica);
      return replica;
    },
    async close() {
      for (const [i, { gateway, store }] of replicas.entries()) {
        // The last one ends what is left; the others just stop.
        await gateway.close({ destroySandboxes: i === replicas.length - 1 }).catch(() => undefined);
        await store.close();
      }
      await runtime.close();
      await database.close();
      await rm(root, { recursive: true, force: true });
      const redis = new Redis(redisUrl);
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    },
  };
}
