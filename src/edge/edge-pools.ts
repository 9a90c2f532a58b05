/**
 * The edge's pools: the same PoolManager the session layer and the admin API use, but its
 * sandboxes live on nodes. A lease is placed (src/edge/placement.ts) and asked of that
 * node; the record returned names the node, and its endpoint routes every call there
 * (src/edge/node-client.ts). Warm-up is the nodes' own (each keeps its share warm), and
 * destroying or measuring a sandbox is asked of its node.
 */
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import { type LeasedSandbox, type PoolCapacity, PoolManager } from "../pool/pool-manager.js";
import type { PoolSpec, SandboxRuntime, SandboxUsage } from "../runtime/sandbox-runtime.js";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";
import type { MemberHold, SandboxRecord } from "../store/coordination/records.js";
import type { NodeClient } from "./node-client.js";
import { nodeEndpoint, parseNodeEndpoint } from "./node-client.js";
import type { NodeDirectory } from "./node-directory.js";
import { placementOrder } from "./placement.js";

const NODE_CALL_MS = 5_000;

/** An edge starts no sandbox (nodes do): the runtime it hands the PoolManager and the gateway refuses to. */
export const EDGE_RUNTIME: SandboxRuntime = {
  kind: "docker",
  isolated: true,
  start: () => Promise.reject(new Error("an edge starts no sandbox: nodes do")),
  destroy: () => Promise.resolve(),
  list: () => Promise.resolve([]),
  close: () => Promise.resolve(),
};

export interface EdgePoolsDeps {
  pools: PoolSpec[];
  store: PoolLedger;
  nodes: NodeClient;
  directory: NodeDirectory;
  metrics: GatewayMetrics;
  log: Logger;
}

export class EdgePools extends PoolManager {
  constructor(private readonly edge: EdgePoolsDeps) {
    super({
      pools: edge.pools,
      store: edge.store,
      runtime: EDGE_RUNTIME,
      client: edge.nodes,
      metrics: edge.metrics,
      log: edge.log,
    });
  }

  /** A sandbox on the best node for the pool: warm where most are free, else a cold start. */
  override async lease(pool: PoolSpec, hold: MemberHold): Promise<LeasedSandbox> {
    const started = process.hrtime.bigint();
    const order = placementOrder(this.edge.directory.list(), pool);
    if (order.length === 0) {
      throw new SandpoolError("capacity.exhausted", `no node serves the '${pool.name}' pool now`, {
        retryAfterSeconds: 2,
      });
    }
    let last: unknown;
    for (const node of order) {
      try {
        const answer = await this.edge.nodes.nodeJson<{ record: SandboxRecord; warm: boolean }>(node.id, {
          method: "POST",
          path: "/node/v1/leases",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ pool: pool.name }),
          timeoutMs: pool.coldStartTimeoutMs + NODE_CALL_MS,
          // The node binds the sandbox to the workspace: a call for any other is refused.
          workspace: hold.workspace,
        });
        const leased = answer.body!;
        const record: SandboxRecord = {
          ...leased.record,
          node: node.id,
          endpoint: nodeEndpoint(node.id, leased.record.sandboxId, hold.workspace),
        };
        this.edge.directory.noteLease(node.id, pool.name, leased.warm);
        this.edge.metrics.leaseDuration.observe(
          { pool: pool.name, start: leased.warm ? "warm" : "cold" },
          Number(process.hrtime.bigint() - started) / 1e9,
        );
        return { record, warm: leased.warm, reused: false };
      } catch (error) {
        // Full, draining since the last heartbeat, or away: the next node may serve.
        last = error;
        this.edge.log.debug({ err: error, node: node.id, pool: pool.name }, "a node could not lease");
      }
    }
    throw last instanceof SandpoolError && last.code === "capacity.exhausted"
      ? last
      : new SandpoolError("capacity.exhausted", `no node could lease from the '${pool.name}' pool`, {
          retryAfterSeconds: 2,
          cause: last,
        });
  }

  /** What `lease` would do now, from the nodes' last heartbeats: the first node placement would ask. */
  override async capacity(pool: PoolSpec): Promise<PoolCapacity> {
    const nodes = this.edge.directory.list();
    const order = placementOrder(nodes, pool);
    const idle = order.reduce((sum, node) => sum + (node.freeWarm[pool.name] ?? 0), 0);
    const maxTotal = nodes.reduce((sum, node) => sum + (node.capacity[pool.name] ?? 0), 0);
    const first = order[0];
    const outcome = !first ? "exhausted" : (first.freeWarm[pool.name] ?? 0) > 0 ? "warm" : "cold";
    return {
      pool: pool.name,
      outcome,
      idle,
      members: Math.min(
        maxTotal,
        nodes.reduce((sum, node) => sum + node.leased, 0),
      ),
      maxTotal,
      detail: first
        ? `${order.length} node(s) could serve; node ${first.id} first (${outcome === "warm" ? "a warm lease" : "a cold start"})`
        : "no ready node serves the pool now",
    };
  }

  /** The node counts its sandboxes against its share: nothing to hold in Redis. */
  override holdMembership(): Promise<void> {
    return Promise.resolve();
  }

  /** Nor to mark: a lease waits on the node, whose pool frees the place when it destroys. */
  override markRetiring(): Promise<void> {
    return Promise.resolve();
  }

  /** Nodes keep their share of every pool warm themselves. */
  override warm(): Promise<void> {
    return Promise.resolve();
  }

  override warmAll(): Promise<void> {
    return Promise.resolve();
  }

  override refreshGauges(): Promise<void> {
    return Promise.resolve();
  }

  override async usageOf(
    record: Pick<SandboxRecord, "runtimeId"> & { node?: string; sandboxId?: string; endpoint?: string },
  ) {
    if (!record.node || !record.sandboxId) return undefined;
    const node = this.edge.directory.get(record.node);
    if (!node || node.state === "lost") return undefined;
    try {
      const answer = await this.edge.nodes.nodeJson<{ usage: SandboxUsage }>(record.node, {
        method: "GET",
        path: `/node/v1/sandboxes/${record.sandboxId}/usage`,
        timeoutMs: NODE_CALL_MS,
        workspace: workspaceOf(record),
      });
      return answer.body?.usage;
    } catch (error) {
      this.edge.log.warn({ err: error, node: record.node }, "could not read a sandbox's usage from its node");
      return undefined;
    }
  }

  /**
   * Asks the sandbox's node to destroy it (a job with retries). A lost node has nothing to
   * ask: when it returns, its reconciliation destroys what no live lease holds.
   */
  override async retire(
    record: Pick<SandboxRecord, "pool" | "sandboxId" | "runtimeId"> & { node?: string; endpoint?: string },
  ) {
    if (!record.node) return;
    const node = this.edge.directory.get(record.node);
    if (!node || node.state === "lost") return;
    try {
      const answer = await this.edge.nodes.call(record.node, {
        method: "POST",
        path: `/node/v1/sandboxes/${record.sandboxId}/destroy`,
        timeoutMs: 30_000,
        workspace: workspaceOf(record),
      });
      await answer.body.dump();
    } catch (error) {
      // Held there for another workspace: nothing of this lease's to destroy (the node's
      // reconciliation removes what no live lease holds). Not worth a retry.
      if (error instanceof SandpoolError && error.code === "session.not_found") return;
      throw error;
    }
  }
}

/** The workspace a record's sandbox was leased to, as its endpoint names it. */
function workspaceOf(record: { endpoint?: string }): string | undefined {
  return record.endpoint ? parseNodeEndpoint(record.endpoint)?.workspace : undefined;
}
