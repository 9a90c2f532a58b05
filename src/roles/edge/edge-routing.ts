/**
 * An edge's routing, built once at start-up: the node directory (the registry, refreshed
 * every heartbeat interval), the signed node client, the pools that place sessions on
 * nodes, and the metrics of the roles. A lost node's sessions are ended here (reason
 * `node_lost`): a call in flight to it has already failed with `sandbox.unreachable`.
 * Hibernated ones are not: they hold no sandbox on it.
 */
import type { Logger } from "pino";
import { Counter, Gauge } from "prom-client";
import type { GatewayMetrics } from "../../metering/gateway-metrics.js";
import type { PoolSpec } from "../../runtime/sandbox-runtime.js";
import type { LeaseStore } from "../../store/coordination/lease-store.js";
import type { PoolLedger } from "../../store/coordination/pool-ledger.js";
import type { LeaseKey } from "../../store/coordination/records.js";
import type { NodeRegistry, NodeView } from "../shared/node-registry.js";
import type { NodeSettings } from "../shared/node-settings.js";
import { NodeSecrets } from "../shared/node-signature.js";
import { NodeClient } from "./node-client.js";
import { NodeDirectory } from "./node-directory.js";
import { RoutedPools } from "./routed-pools.js";

/** The session layer's `end`, for the sessions of a lost node. */
export interface SessionEnds {
  end(key: LeaseKey, reason: "node_lost"): Promise<boolean>;
}

export interface EdgeRouting {
  pools: RoutedPools;
  client: NodeClient;
  directory: NodeDirectory;
  registry: NodeRegistry;
  /** Set once the session layer exists (it needs the pools first). */
  bindSessions(sessions: SessionEnds): void;
  start(): Promise<void>;
  stop(): void;
}

export function createEdgeRouting(
  config: { node: Pick<NodeSettings, "heartbeatMs" | "secrets">; pools: PoolSpec[] },
  deps: { registry: NodeRegistry; store: LeaseStore & PoolLedger; metrics: GatewayMetrics; log: Logger },
): EdgeRouting {
  const { registry, store, metrics, log } = deps;
  const routingErrors = new Counter({
    name: "sandpool_routing_errors_total",
    help: "Calls an edge could not route to a node, by reason",
    labelNames: ["reason"] as const,
    registers: [metrics.registry],
  });
  const nodesLost = new Counter({
    name: "sandpool_nodes_lost_total",
    help: "Nodes this edge found lost (it ended their sessions)",
    registers: [metrics.registry],
  });
  let sessions: SessionEnds | undefined;
  const endSessionsOf = async (node: NodeView) => {
    nodesLost.inc();
    for (const lease of await store.listLeases()) {
      if (lease.node !== node.id) continue;
      // A hibernated session holds no sandbox there: it resumes from its checkpoint (on
      // another node when checkpoints are shared; else when its node is back). One being
      // restored is its restorer's: a restore that fails keeps the checkpoint for the next.
      const phase = lease.hibernation?.phase;
      if (phase === "saved" || phase === "restoring") continue;
      await sessions?.end({ workspace: lease.workspace, sessionId: lease.sessionId }, "node_lost");
    }
  };
  const directory = new NodeDirectory(registry, {
    refreshMs: config.node.heartbeatMs,
    log,
    onLost: endSessionsOf,
  });
  new Gauge({
    name: "sandpool_nodes",
    help: "Nodes in the registry, by state",
    labelNames: ["state"] as const,
    registers: [metrics.registry],
    collect() {
      const nodes = directory.list();
      for (const state of ["ready", "draining", "lost"] as const) {
        this.set({ state }, nodes.filter((node) => node.state === state).length);
      }
    },
  });
  const client = new NodeClient(new NodeSecrets(config.node.secrets), directory, (reason) =>
    routingErrors.inc({ reason }),
  );
  const pools = new RoutedPools({ pools: config.pools, nodes: client, directory, metrics, log });
  return {
    pools,
    client,
    directory,
    registry,
    bindSessions: (bound) => {
      sessions = bound;
    },
    start: () => directory.start(),
    stop: () => directory.stop(),
  };
}
