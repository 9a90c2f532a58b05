/**
 * The edge's pools: the same `SandboxPool` the session layer and the admin API use as the
 * local pools (src/pool/pool-manager.ts), but its sandboxes live on nodes and the edge
 * starts none. A lease is placed (placement.ts) and asked of that node; the record returned
 * names the node, and its endpoint routes every call there (node-client.ts). Warm-up,
 * membership and reuse are the nodes' own (each keeps its share warm and counts it, and
 * parks a session's sandbox for its workspace's next session when asked: `recycle`), and
 * destroying or measuring a sandbox is asked of its node. A workspace's lease asks first the
 * node that parked its sandbox most recently, as this edge knows it (parked-on-nodes.ts).
 */
import type { Logger } from "pino";
import { SandpoolError } from "../../contract/error-codes.js";
import type { GatewayMetrics } from "../../metering/gateway-metrics.js";
import { PoolDemandAccounting } from "../../pool/pool-demand-accounting.js";
import type { PoolSizes } from "../../pool/pool-sizes.js";
import {
  type GatewayPools,
  type LeasedSandbox,
  leaseBudgetMs,
  type PoolCapacity,
  type RetiringSandbox,
  startQueueTimeoutMsOf,
} from "../../pool/sandbox-pool.js";
import { StartRate, type StartRateView } from "../../pool/start-rate.js";
import type { PoolSpec, SandboxUsage } from "../../runtime/sandbox-runtime.js";
import type { PoolStartFailure } from "../../store/coordination/pool-demand-exchange.js";
import type { MemberHold, SandboxRecord } from "../../store/coordination/records.js";
import type { NodeView } from "../shared/node-registry.js";
import type { NodeClient } from "./node-client.js";
import { nodeEndpoint, parseNodeEndpoint } from "./node-client.js";
import type { NodeDirectory } from "./node-directory.js";
import { ParkedOnNodes, preferNode, recycleOnNode } from "./parked-on-nodes.js";
import { placementOrder } from "./placement.js";

const NODE_CALL_MS = 5_000;

export interface RoutedPoolsDeps {
  pools: PoolSpec[];
  nodes: NodeClient;
  directory: NodeDirectory;
  metrics: GatewayMetrics;
  log: Logger;
}

export class RoutedPools implements GatewayPools {
  /** The edge's own leases are counted by their nodes: what the deployment shares stays empty here. */
  readonly demand: PoolDemandAccounting;
  private readonly startRate = new StartRate();
  /** The node each workspace's sandbox was last parked on, as this edge saw it. */
  private readonly parkedOn = new ParkedOnNodes();

  constructor(private readonly edge: RoutedPoolsDeps) {
    this.demand = new PoolDemandAccounting(edge.pools);
  }

  list(): PoolSpec[] {
    return [...this.edge.pools];
  }

  leaseBudgetMs(pool: PoolSpec): number {
    return leaseBudgetMs(pool);
  }

  /** The configured sizes: a resize is each node's share to follow. */
  sizeOf(pool: PoolSpec): PoolSizes {
    return { minIdle: pool.minIdle, maxTotal: pool.maxTotal };
  }

  effectiveMinIdle(pool: PoolSpec): number {
    return this.demand.effectiveMinIdle(pool, this.sizeOf(pool));
  }

  /** The edge starts nothing: an empty view. */
  startRateView(): StartRateView {
    return this.startRate.view();
  }

  startFailureOf(name: string): PoolStartFailure | undefined {
    return this.demand.sharedStartFailure(name);
  }

  /**
   * A sandbox on the best node for the pool: warm where most are free, else a cold start.
   * `among` narrows the nodes asked (a resume from a node-local checkpoint: its node alone).
   */
  async lease(pool: PoolSpec, hold: MemberHold, among?: (node: NodeView) => boolean): Promise<LeasedSandbox> {
    const started = process.hrtime.bigint();
    const reuse = hold.reuse !== false;
    const order = preferNode(
      placementOrder(this.edge.directory.list(), pool),
      reuse ? this.parkedOn.nodeFor(hold.workspace, pool.name) : undefined,
    ).filter((node) => among?.(node) ?? true);
    if (order.length === 0) {
      throw new SandpoolError("capacity.exhausted", `no node serves the '${pool.name}' pool now`, {
        retryAfterSeconds: 2,
      });
    }
    let last: unknown;
    for (const node of order) {
      try {
        const answer = await this.edge.nodes.nodeJson<{
          record: SandboxRecord;
          warm: boolean;
          reused?: boolean;
        }>(node.id, {
          method: "POST",
          path: "/node/v1/leases",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ pool: pool.name, reuse }),
          // The node's lease may wait its turn at its start gate, then start a sandbox.
          timeoutMs: startQueueTimeoutMsOf(pool) + pool.coldStartTimeoutMs + NODE_CALL_MS,
          // The node binds the sandbox to the workspace: a call for any other is refused.
          workspace: hold.workspace,
        });
        const leased = answer.body!;
        const record: SandboxRecord = {
          ...leased.record,
          node: node.id,
          endpoint: nodeEndpoint(node.id, leased.record.sandboxId, hold.workspace),
        };
        const reused = leased.reused === true;
        this.parkedOn.leased(hold.workspace, pool.name, node.id, reused);
        // A parked sandbox was none of the node's free warm ones.
        this.edge.directory.noteLease(node.id, pool.name, leased.warm && !reused);
        this.edge.metrics.leaseDuration.observe(
          { pool: pool.name, start: reused ? "reused" : leased.warm ? "warm" : "cold" },
          Number(process.hrtime.bigint() - started) / 1e9,
        );
        return { record, warm: leased.warm, reused };
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
  async capacity(pool: PoolSpec): Promise<PoolCapacity> {
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
  holdMembership(): Promise<void> {
    return Promise.resolve();
  }

  /** Nor to mark: a lease waits on the node, whose pool frees the place when it destroys. */
  markRetiring(): Promise<void> {
    return Promise.resolve();
  }

  /** Nodes keep their share of every pool warm themselves. */
  warm(): Promise<void> {
    return Promise.resolve();
  }

  warmAll(): Promise<void> {
    return Promise.resolve();
  }

  /** The nodes report their own pools' gauges. */
  refreshGauges(): Promise<void> {
    return Promise.resolve();
  }

  /** The node scrubs, and its own lease waits for the scrub (src/roles/node/node-parking.ts). */
  expectRecycle(): void {}

  /** Asks the sandbox's node to park it for `owner`'s next session there; false: destroy it. */
  async recycle(record: SandboxRecord, owner: string): Promise<boolean> {
    // Its server listened again while code ran (a restore, a save given up): never parked.
    if (record.neverReuse) return false;
    const parked = await recycleOnNode(this.edge.nodes, record, owner, this.edge.log);
    if (parked && record.node) this.parkedOn.parked(owner, record.pool, record.node);
    return parked;
  }

  async usageOf(record: RetiringSandbox): Promise<SandboxUsage | undefined> {
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
  async retire(record: RetiringSandbox): Promise<void> {
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
