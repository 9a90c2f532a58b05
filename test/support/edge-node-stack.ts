/**
 * An edge and a node in this process, as `serve --role edge` and `--role node` assemble them:
 * the edge's gateway (PGlite, the Redis store and registry, in-process jobs) places sessions on
 * the node, which runs real sandbox servers as processes (the process runtime) and serves the
 * node API on loopback. Both share a fresh Redis key prefix, removed on close. `advertise`
 * lets a test put something between them (a proxy): the node advertises what it returns.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { Kysely } from "kysely";
import { pino } from "pino";
import { mintToken } from "../../src/auth/dev-keys.js";
import { type GatewayConfigInput, gatewayConfigSchema } from "../../src/config/gateway-config.js";
import { consoleAssetsIn } from "../../src/console/console-assets.js";
import { type RunningGateway, startGateway } from "../../src/gateway/start-gateway.js";
import { InProcessJobRunner } from "../../src/jobs/in-process-job-runner.js";
import { type RunningNode, startNode } from "../../src/roles/node/run-node.js";
import { NodeRegistry } from "../../src/roles/shared/node-registry.js";
import type { DockerRuntime } from "../../src/runtime/docker/docker-runtime.js";
import { ProcessRuntime } from "../../src/runtime/process/process-runtime.js";
import { loadLuaScripts } from "../../src/store/coordination/redis/lua-scripts.js";
import {
  connectRedis,
  openRedis,
  type RedisTarget,
  scanKeys,
} from "../../src/store/coordination/redis/redis-connection.js";
import { RedisCoordinationStore } from "../../src/store/coordination/redis/redis-store.js";
import type { Database } from "../../src/store/sql/database-types.js";
import { migrateToLatest } from "../../src/store/sql/migrate.js";
import { PgliteDialect } from "../../src/store/sql/pglite-dialect.js";
import { pgliteTemplate } from "../integration/store/pglite-template.js";
import { resolvePython } from "./cli.js";
import { ContractClient } from "./contract-client.js";
import { freePort } from "./dev-cli-gateway.js";
import { TEST_IMAGE, TEST_SECRET } from "./gateway-harness.js";
import { redisUrl } from "./redis.js";

export const NODE_ID = "node-under-test";
export const NODE_SECRET = "edge-node-stack-secret-0123456789-abcdefghij";

export interface EdgeNodeStack {
  edge: RunningGateway;
  node: RunningNode;
  /** The node API's own address (not the advertised one, when a proxy sits between). */
  nodeUrl: string;
  /** The edge's view of the leases (the same Redis). */
  store: RedisCoordinationStore;
  client(workspace: string): Promise<ContractClient>;
  token(workspace: string): Promise<string>;
  close(): Promise<void>;
}

export async function startEdgeNodeStack(
  options: {
    config?: Partial<GatewayConfigInput>;
    advertise?: (nodeUrl: string) => Promise<string>;
    /** Serve the console from this build folder (run from src/, the edge has none of its own). */
    consoleDir?: string;
  } = {},
): Promise<EdgeNodeStack> {
  const log = pino({ level: process.env.SANDPOOL_TEST_LOG ?? "silent" });
  const root = await mkdtemp(path.join(tmpdir(), "sandpool-edge-node-"));
  const port = await freePort();
  const nodeUrl = `http://127.0.0.1:${port}`;
  const advertiseUrl = options.advertise ? await options.advertise(nodeUrl) : nodeUrl;
  const deployment = `edge-node-${randomBytes(4).toString("hex")}`;
  const { node: nodeOverrides, ...overrides } = options.config ?? {};
  const config = gatewayConfigSchema.parse({
    host: "127.0.0.1",
    port: 0,
    deployment,
    auth: { jwtSecret: TEST_SECRET },
    policy: { allowedImages: [TEST_IMAGE], defaultImage: TEST_IMAGE },
    pools: [{ name: "default", image: TEST_IMAGE, minIdle: 1, maxTotal: 4 }],
    intervals: { warmMs: 100, reapMs: 200, reconcileMs: 60_000 },
    ...overrides,
    node: {
      id: NODE_ID,
      host: "127.0.0.1",
      port,
      advertiseUrl,
      secrets: [NODE_SECRET],
      heartbeatMs: 300,
      lostAfterMs: 5_000,
      ...nodeOverrides,
    },
  });
  const redis: RedisTarget = { kind: "standalone", url: redisUrl };
  const prefix = `sandpool:${deployment}:`;

  const runtime = new ProcessRuntime({
    rootDir: path.join(root, "sandboxes"),
    python: resolvePython(),
    execTimeoutCeilingSeconds: config.policy.execTimeoutCeilingSeconds,
    // The sandbox's own cap stays large: only what the edge sends can lower it.
    maxFileBytes: 100 * 1024 * 1024,
    log,
  });
  // A node asks its engine which images it has (processes run any) and which runtimes (none:
  // it offers container isolation alone).
  const nodeRuntime = Object.assign(runtime, {
    imageAvailable: async () => true,
    registeredRuntimes: async () => [],
  }) as unknown as DockerRuntime;
  const node = await startNode(config, nodeRuntime, redis, log);

  const pglite = await PGlite.create({ loadDataDir: await pgliteTemplate() });
  const db = new Kysely<Database>({ dialect: new PgliteDialect(pglite) });
  await migrateToLatest(db);
  const store = await RedisCoordinationStore.connect({ target: redis, prefix });
  const registryClient = openRedis(redis, "commands");
  await connectRedis(registryClient, redis);
  const nodes = new NodeRegistry(registryClient, await loadLuaScripts(), {
    prefix,
    lostAfterMs: config.node.lostAfterMs,
  });
  const edge = await startGateway(
    config,
    { store, db, jobs: new InProcessJobRunner(log), nodes },
    log,
    options.consoleDir ? { consoleAssets: consoleAssetsIn(options.consoleDir) } : {},
  );
  const token = (workspace: string) => mintToken({ secret: TEST_SECRET, workspace, ttlSeconds: 600 });
  return {
    edge,
    node,
    nodeUrl,
    store,
    token,
    client: async (workspace) => new ContractClient(edge.url, await token(workspace)),
    close: async () => {
      await edge.close().catch(() => undefined);
      await node.close().catch(() => undefined);
      await runtime.close();
      const keys = await scanKeys(registryClient, `${prefix}*`);
      if (keys.length > 0) await registryClient.del(...keys);
      registryClient.disconnect();
      await store.close();
      await db.destroy();
      await rm(root, { recursive: true, force: true });
    },
  };
}
