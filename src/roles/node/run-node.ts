/**
 * `sandpool serve --role node`: one per sandbox host. It owns the host's Docker engine, its
 * share of the warm pools and the sandboxes leased from them; it serves the node API to
 * the edges (signed both ways) and heart-beats its advert into the registry. It serves no
 * contract and no admin API. On start it reconciles its engine with the store's live
 * leases before it advertises itself: what a previous run left that no lease holds goes.
 */

import type { Logger } from "pino";
import { Gauge, Registry } from "prom-client";
import { SandboxClient } from "../../forward/sandbox-client.js";
import { FsCheckpointStore } from "../../hibernate/fs-checkpoint-store.js";
import type { HibernateSettings } from "../../hibernate/hibernate-settings.js";
import { hibernationRefusalsCounter } from "../../metering/gateway-metrics.js";
import type { DockerRuntime } from "../../runtime/docker/docker-runtime.js";
import { offeredIsolation } from "../../runtime/docker/isolation-check.js";
import { checkpointsOf } from "../../runtime/sandbox-checkpoints.js";
import type { PoolSpec } from "../../runtime/sandbox-runtime.js";
import { loadLuaScripts } from "../../store/coordination/redis/lua-scripts.js";
import {
  connectRedis,
  openRedis,
  type RedisTarget,
} from "../../store/coordination/redis/redis-connection.js";
import { RedisCoordinationStore } from "../../store/coordination/redis/redis-store.js";
import { NodeRegistry } from "../shared/node-registry.js";
import { type NodeSettings, nodeIdOf } from "../shared/node-settings.js";
import { NodeSecrets, RequestVerifier } from "../shared/node-signature.js";
import { listenNodeApi, type RunningNodeApi } from "./node-api.js";
import type { NodeApiDeps } from "./node-call.js";
import { NodeHibernation } from "./node-hibernation.js";
import { NodeSandboxes } from "./node-sandboxes.js";

export interface RunningNode {
  api: RunningNodeApi;
  sandboxes: NodeSandboxes;
  close(): Promise<void>;
}

/** What a node reads of the configuration (the whole of it, from the CLI), and what is made of it. */
export interface NodeRoleConfig {
  deployment: string;
  node: NodeSettings;
  pools: PoolSpec[];
  limits: { maxJsonBodyBytes: number };
  intervals: { reconcileMs: number };
  /** Where hibernated sessions' checkpoints are kept, and whether every node mounts it. */
  hibernate?: HibernateSettings;
  /** The bearer token the node's `/metrics` requires (`metrics.token`); unset, it answers anyone. */
  metricsToken?: NodeApiDeps["metricsToken"];
}

export async function startNode(
  config: NodeRoleConfig,
  runtime: DockerRuntime,
  redis: RedisTarget,
  log: Logger,
): Promise<RunningNode> {
  const nodeId = nodeIdOf(config.node);
  const prefix = `sandpool:${config.deployment}:`;
  const store = await RedisCoordinationStore.connect({ target: redis, prefix });
  const registryClient = openRedis(redis, "commands");
  await connectRedis(registryClient, redis);
  const registry = new NodeRegistry(registryClient, await loadLuaScripts(), {
    prefix,
    lostAfterMs: config.node.lostAfterMs,
  });
  const client = new SandboxClient();
  const sandboxes = new NodeSandboxes({
    pools: config.pools,
    runtime,
    client,
    store,
    log,
    nodeId,
    url: config.node.advertiseUrl!,
  });
  const reconciled = await sandboxes.reconcile();
  log.info({ node: nodeId, ...reconciled }, "node reconciled its engine");
  const metrics = new Registry();
  const hibernationRefusals = hibernationRefusalsCounter(metrics);
  const runtimeHibernation = checkpointsOf(runtime);
  const hibernation =
    runtimeHibernation && config.hibernate
      ? new NodeHibernation({
          pools: config.pools,
          sandboxes,
          runtime,
          hibernation: runtimeHibernation,
          checkpoints: FsCheckpointStore.fromSettings(config.hibernate, hibernationRefusals),
          leases: store,
          nodeId,
          shared: config.hibernate.shared,
          log,
        })
      : undefined;
  // What a crash left in the checkpoint store goes with the engine's leftovers.
  const reconcileAll = async () => {
    await sandboxes.reconcile();
    const removed = await hibernation?.reconcile();
    if (removed) log.info({ removed }, "removed checkpoints no session names");
  };

  new Gauge({
    name: "sandpool_node_sandboxes",
    help: "Sandboxes on this node, per pool and state (warm: ready to lease; leased: serving a session; parked: kept for its workspace's next session)",
    labelNames: ["node", "pool", "state"],
    registers: [metrics],
    collect() {
      this.reset();
      for (const count of sandboxes.counts())
        this.set({ node: nodeId, pool: count.pool, state: count.state }, count.count);
    },
  });
  const secrets = new NodeSecrets(config.node.secrets);
  let ready = false;
  const api = await listenNodeApi(
    {
      sandboxes,
      ...(hibernation ? { hibernation } : {}),
      client,
      secrets,
      verifier: new RequestVerifier(secrets, { nodeId, clockWindowMs: config.node.clockWindowMs }),
      metrics,
      metricsToken: config.metricsToken,
      log,
      ready: () => ready,
      limits: {
        maxBodyBytes: config.limits.maxJsonBodyBytes,
        bodyTimeoutMs: config.node.bodyTimeoutMs,
        headersTimeoutMs: config.node.headersTimeoutMs,
        requestTimeoutMs: config.node.requestTimeoutMs,
        maxConnections: config.node.maxConnections,
      },
    },
    config.node.host,
    config.node.port,
  );

  const images = async () => {
    const unique = [...new Set(config.pools.map((pool) => pool.image))];
    const present = await Promise.all(
      unique.map((image) => runtime.imageAvailable(image).catch(() => false)),
    );
    return unique.filter((_, index) => present[index]);
  };
  let knownImages = await images();
  let knownIsolation = await offeredIsolation(runtime);
  let beats = 0;
  const beat = async () => {
    // Images and runtimes change rarely: asked again every 15 heartbeats.
    if (++beats % 15 === 0) {
      knownImages = await images();
      knownIsolation = await offeredIsolation(runtime).catch(() => knownIsolation);
    }
    const { draining } = await registry.heartbeat(sandboxes.advert(knownImages, knownIsolation));
    sandboxes.draining = draining;
    const live = (await registry.list()).filter((node) => node.state !== "lost");
    const ids = live.map((node) => node.id);
    if (!ids.includes(nodeId)) ids.push(nodeId);
    ids.sort();
    sandboxes.resize(live.filter((node) => node.state === "ready").length || 1, ids.indexOf(nodeId));
  };
  await beat();
  ready = true;
  let stopped = false;
  const heartbeat = setInterval(() => {
    beat().catch((error) => log.warn({ err: error }, "node heartbeat failed"));
  }, config.node.heartbeatMs);
  const reconcileTimer = setInterval(() => {
    if (stopped) return;
    reconcileAll().catch((error) => log.warn({ err: error }, "node reconciliation failed"));
  }, config.intervals.reconcileMs);

  return {
    api,
    sandboxes,
    close: async () => {
      stopped = true;
      ready = false;
      clearInterval(heartbeat);
      clearInterval(reconcileTimer);
      await api.close();
      await sandboxes.close();
      await client.close();
      registryClient.disconnect();
      await store.close();
    },
  };
}
