/**
 * `sandpool serve`: the gateway with the production backends (Postgres, Redis, BullMQ, and
 * the docker runtime; never the process runtime, see serve-refusals.ts). It refuses to start,
 * naming everything that is missing or refused, rather than falling back to anything. Any number of replicas
 * share one Redis and one Postgres. On SIGTERM it stops accepting, lets calls in flight
 * finish within the grace period, and leaves leased sandboxes to the other replicas.
 */
import type { Logger } from "pino";
import type { GatewayConfig } from "../config/gateway-config.js";
import { ConfigError, loadGatewayConfig } from "../config/load-config.js";
import type { GatewayEgress } from "../egress/gateway-egress.js";
import { SandboxClient } from "../forward/sandbox-client.js";
import { startGateway } from "../gateway/start-gateway.js";
import { BullmqJobRunner } from "../jobs/bullmq-job-runner.js";
import { createLogger } from "../logging/create-logger.js";
import { startNode } from "../roles/node/run-node.js";
import { NodeRegistry } from "../roles/shared/node-registry.js";
import { nodeIdOf, nodeSandboxOwner } from "../roles/shared/node-settings.js";
import { DockerRuntime } from "../runtime/docker/docker-runtime.js";
import { metricsTokenOf } from "../service-operations/metrics-token.js";
import { loadLuaScripts } from "../store/coordination/redis/lua-scripts.js";
import { redisTargetFrom } from "../store/coordination/redis/redis-config.js";
import {
  connectRedis,
  describeRedisTarget,
  openRedis,
} from "../store/coordination/redis/redis-connection.js";
import { RedisCoordinationStore } from "../store/coordination/redis/redis-store.js";
import { assertSchemaCurrent, migrateToLatest } from "../store/sql/migrate.js";
import { openPostgres } from "../store/sql/open-database.js";
import { onShutdown } from "./on-shutdown.js";
import { openUsageJournal } from "./open-usage-journal.js";
import { printGatewayReady, printReady } from "./ready-line.js";
import { serveEgress } from "./serve-egress.js";
import { assertIsolationHolds, assertIsolationPossible, poolsThisEngineServes } from "./serve-isolation.js";
import { noticesForServe, refusedForServe } from "./serve-refusals.js";

export interface ServeOptions {
  config?: string;
  migrate?: boolean;
  /** `--role`: wins over the file and SANDPOOL_ROLE. */
  role?: string;
  json?: boolean;
}

/**
 * Everything `serve` cannot run without, said in one message. A node uses no Postgres (policy,
 * usage and audit live with the edges), so it is not asked for one: DATABASE_URL stays off nodes.
 */
export function missingForServe(what: {
  databaseUrl?: string;
  redisConfigured: boolean;
  role?: string;
}): string[] {
  const missing: string[] = [];
  if (!what.databaseUrl && what.role !== "node")
    missing.push("DATABASE_URL (Postgres, for policy and usage)");
  if (!what.redisConfigured)
    missing.push(
      "REDIS_URL (Redis, for the shared pool, quotas and jobs; or SANDPOOL_REDIS_SENTINELS, or SANDPOOL_REDIS_CLUSTER_NODES)",
    );
  return missing;
}

const REDIS_VARIABLES = ["REDIS_URL", "SANDPOOL_REDIS_SENTINELS", "SANDPOOL_REDIS_CLUSTER_NODES"];

/**
 * The docker runtime: the only one serve runs (refusedForServe has refused any other). A
 * node's sandboxes also carry its owner label, so nodes sharing an engine keep apart.
 */
function createRuntime(
  config: GatewayConfig,
  log: Logger,
  egress: GatewayEgress | undefined,
  owner?: string,
): DockerRuntime {
  return new DockerRuntime(
    {
      ...config.runtime.docker,
      deployment: config.deployment,
      ...(owner === undefined ? {} : { owner }),
      execTimeoutCeilingSeconds: config.policy.execTimeoutCeilingSeconds,
      maxFileBytes: config.policy.maxFileBytes,
    },
    log,
    egress,
  );
}

/** The configuration, or one error naming every problem, the missing services included. */
function loadServeConfig(options: ServeOptions): GatewayConfig {
  let config: GatewayConfig | undefined;
  const problems: string[] = [];
  try {
    const env = options.role === undefined ? process.env : { ...process.env, SANDPOOL_ROLE: options.role };
    config = loadGatewayConfig({ file: options.config, env });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
  }
  const missing = config
    ? missingForServe({
        databaseUrl: config.databaseUrl,
        redisConfigured: redisTargetFrom(config) !== undefined,
        role: config.role,
      })
    : missingForServe({
        databaseUrl: process.env.DATABASE_URL,
        redisConfigured: REDIS_VARIABLES.some((name) => process.env[name]),
        role: options.role ?? process.env.SANDPOOL_ROLE,
      });
  if (options.config && !config) missing.length = 0; // the file may set them: its problems come first
  problems.push(...missing.map((what) => `missing ${what}`));
  if (config) problems.push(...refusedForServe(config));
  if (problems.length > 0 || !config) {
    throw new ConfigError(problems, options.config ?? "environment");
  }
  return config;
}

/**
 * serve's isolation gate, for every role that runs sandboxes: the engine must allow what
 * isolation needs, and a live probe sandbox must show it holds; else the runtime is closed
 * and serve refuses to start.
 */
async function refuseUnlessIsolated(
  runtime: DockerRuntime,
  config: GatewayConfig,
  options: ServeOptions,
  log: Logger,
): Promise<void> {
  const probeClient = new SandboxClient();
  try {
    await assertIsolationPossible(runtime, options.config ?? "environment");
    await assertIsolationHolds(runtime, probeClient, config, log);
  } catch (error) {
    await runtime.close();
    throw error;
  } finally {
    await probeClient.close();
  }
}

/** Role node: the engine, its warm share and the node API; no contract, no Postgres, no token keys. */
async function runNodeRole(config: GatewayConfig, options: ServeOptions, log: Logger): Promise<void> {
  // Egress pools' proxy binds to workspace policy, which lives with the edges: not on nodes yet.
  const runtime = createRuntime(config, log, undefined, nodeSandboxOwner(nodeIdOf(config.node)));
  // A node whose engine lacks gVisor serves the other pools; it says so in its advert, and
  // edges place gvisor pools' sessions elsewhere (src/roles/edge/placement.ts).
  const served = await poolsThisEngineServes(runtime, config, log).catch(async (error: unknown) => {
    await runtime.close();
    throw error;
  });
  await refuseUnlessIsolated(runtime, served, options, log);
  const redis = redisTargetFrom(config)!;
  const node = await startNode(
    { ...served, metricsToken: metricsTokenOf(served.metrics) },
    runtime,
    redis,
    log,
  );
  log.info(
    { node: nodeIdOf(config.node), url: node.api.url, advertised: config.node.advertiseUrl },
    "sandpool node serving",
  );
  printReady(options.json === true, [`sandpool node ${nodeIdOf(config.node)} listening on ${node.api.url}`], {
    url: node.api.url,
    node: nodeIdOf(config.node),
  });
  onShutdown(
    log,
    async () => {
      await node.close();
      await runtime.close();
    },
    { graceMs: config.shutdownGraceMs },
  );
}

/** Role edge: the contract and admin API, sessions placed on nodes; no engine. */
async function runEdgeRole(config: GatewayConfig, options: ServeOptions, log: Logger): Promise<void> {
  const db = openPostgres(config.databaseUrl!);
  if (options.migrate || config.migrateOnStart) {
    const { applied } = await migrateToLatest(db);
    if (applied.length > 0) log.info({ applied }, "migrations applied");
  } else {
    await assertSchemaCurrent(db);
  }
  const redis = redisTargetFrom(config)!;
  const prefix = `sandpool:${config.deployment}:`;
  const store = await RedisCoordinationStore.connect({ target: redis, prefix });
  const registryClient = openRedis(redis, "commands");
  await connectRedis(registryClient, redis);
  const nodes = new NodeRegistry(registryClient, await loadLuaScripts(), {
    prefix,
    lostAfterMs: config.node.lostAfterMs,
  });
  const jobs = new BullmqJobRunner({ target: redis, queueName: config.deployment }, log);
  const usageJournal = openUsageJournal(config, store, log);
  const gateway = await startGateway(config, { store, db, jobs, nodes, usageJournal }, log, {
    ready: () => store.ping(),
  });
  log.info({ url: gateway.url, redis: describeRedisTarget(redis) }, "sandpool edge serving");
  printGatewayReady(options.json === true, "edge", gateway);
  onShutdown(
    log,
    async () => {
      await gateway.close();
      registryClient.disconnect();
      await store.close();
      await db.destroy();
    },
    { graceMs: config.shutdownGraceMs },
  );
}

export async function runServe(options: ServeOptions): Promise<void> {
  const config = loadServeConfig(options);
  const log = createLogger("sandpool");
  for (const notice of noticesForServe(config)) log.warn(notice);
  if (config.role === "node") return runNodeRole(config, options, log);
  if (config.role === "edge") return runEdgeRole(config, options, log);
  const db = openPostgres(config.databaseUrl!);
  if (options.migrate || config.migrateOnStart) {
    const { applied } = await migrateToLatest(db);
    if (applied.length > 0) log.info({ applied }, "migrations applied");
  } else {
    await assertSchemaCurrent(db);
  }
  // Egress pools' only way out: the filtering proxy, served by this process (its CA may be in Postgres).
  const egress = await serveEgress(config, db, log);
  const runtime = createRuntime(config, log, egress);
  await refuseUnlessIsolated(runtime, config, options, log);
  const redis = redisTargetFrom(config)!; // missingForServe made sure there is one
  const store = await RedisCoordinationStore.connect({
    target: redis,
    prefix: `sandpool:${config.deployment}:`,
  });
  const jobs = new BullmqJobRunner({ target: redis, queueName: config.deployment }, log);
  const usageJournal = openUsageJournal(config, store, log);
  const gateway = await startGateway(config, { store, db, runtime, jobs, egress, usageJournal }, log, {
    ready: () => store.ping(),
  });
  log.info(
    {
      url: gateway.url,
      runtime: runtime.kind,
      redis: describeRedisTarget(redis),
      pools: config.pools.length,
    },
    "sandpool serving",
  );
  printGatewayReady(options.json === true, "serve", gateway);

  // Leased sandboxes stay: the other replicas serve their sessions.
  onShutdown(
    log,
    async () => {
      await gateway.close();
      await runtime.close();
      await store.close();
      await db.destroy();
    },
    { graceMs: config.shutdownGraceMs },
  );
}
