/**
 * Where a workspace's sandboxes are parked, as this edge knows it: nodes park a session's
 * sandbox for its workspace's next session (src/roles/node/node-parking.ts), and that session
 * must be placed on the same node to get it. The edge remembers, per workspace and pool, the
 * node that parked its sandbox most recently (and how many it parked there since), and
 * placement asks that node first (`preferred`).
 *
 * In memory, bounded (MAX_REMEMBERED, least recently parked forgotten first) and forgetting
 * what the node has expired itself (PARKED_IDLE_MS). Another edge replica does not know what
 * this one parked: a session created through it is placed as usual (placement.ts), and
 * reuses its sandbox only if that order happens to ask the same node.
 */
import type { Logger } from "pino";
import { PARKED_IDLE_MS } from "../../pool/sandbox-reuse.js";
import type { SandboxRecord } from "../../store/coordination/records.js";
import type { NodeView } from "../shared/node-registry.js";
import { type NodeClient, parseNodeEndpoint } from "./node-client.js";

/** Workspace-and-pool entries kept: a few hundred bytes each. */
const MAX_REMEMBERED = 10_000;
/** A scrub (at most 30 s, src/pool/sandbox-reuse.ts) and the node's own destroy, if it fails. */
const RECYCLE_CALL_MS = 40_000;

interface Parked {
  node: string;
  /** Parked there since this edge last found none there. */
  count: number;
  at: number;
}

export class ParkedOnNodes {
  private readonly entries = new Map<string, Parked>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly max = MAX_REMEMBERED,
  ) {}

  /** The node `workspace` last parked a sandbox of `pool` on, if it may still hold it. */
  nodeFor(workspace: string, pool: string): string | undefined {
    const entry = this.entries.get(key(workspace, pool));
    if (!entry) return undefined;
    if (this.now() - entry.at < PARKED_IDLE_MS) return entry.node;
    this.entries.delete(key(workspace, pool));
    return undefined;
  }

  /** A node parked one of `workspace`'s sandboxes of `pool`. */
  parked(workspace: string, pool: string, node: string): void {
    const at = key(workspace, pool);
    const entry = this.entries.get(at);
    this.entries.delete(at);
    this.entries.set(at, { node, count: entry?.node === node ? entry.count + 1 : 1, at: this.now() });
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  /** A lease of `workspace` on `node` took a parked sandbox (`reused`) or found none there. */
  leased(workspace: string, pool: string, node: string, reused: boolean): void {
    const at = key(workspace, pool);
    const entry = this.entries.get(at);
    if (entry?.node !== node) return;
    if (reused && entry.count > 1) entry.count -= 1;
    else this.entries.delete(at);
  }

  get size(): number {
    return this.entries.size;
  }
}

/** The placement order with `preferred` first, when it is in it (ready, serving the pool). */
export function preferNode(order: NodeView[], preferred: string | undefined): NodeView[] {
  const index = preferred === undefined ? -1 : order.findIndex((node) => node.id === preferred);
  if (index <= 0) return order;
  return [order[index]!, ...order.slice(0, index), ...order.slice(index + 1)];
}

/**
 * Asks the sandbox's node to scrub and park it for `owner`'s next session: whether it did.
 * False on any failure (the node gone, the call refused): the caller destroys the sandbox.
 */
export async function recycleOnNode(
  nodes: NodeClient,
  record: SandboxRecord,
  owner: string,
  log: Logger,
): Promise<boolean> {
  const node = record.node ?? (record.endpoint ? parseNodeEndpoint(record.endpoint)?.nodeId : undefined);
  if (!node) return false;
  try {
    const answer = await nodes.nodeJson<{ parked?: unknown }>(node, {
      method: "POST",
      path: `/node/v1/sandboxes/${record.sandboxId}/recycle`,
      timeoutMs: RECYCLE_CALL_MS,
      // The node holds the sandbox for the workspace it was leased to: any other is refused.
      workspace: owner,
    });
    return answer.body?.parked === true;
  } catch (error) {
    log.warn({ err: error, node, sandbox: record.sandboxId }, "a node could not recycle a sandbox");
    return false;
  }
}

function key(workspace: string, pool: string): string {
  return `${pool}\n${workspace}`;
}
