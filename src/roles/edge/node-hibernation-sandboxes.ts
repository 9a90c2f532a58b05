/**
 * Hibernation's sandbox steps on an edge (docs/hibernate.md): the sessions' sandboxes run on
 * nodes, so each step is asked of a node (src/roles/node/node-hibernation-routes.ts), signed
 * and made for the session's workspace. The checkpoint is kept in the store of the node that
 * held the sandbox, and its record names that node. With `hibernate.shared` (every node
 * mounts one checkpoint directory) a session resumes on any node that offers its pool,
 * placed as a lease is; without, on the node holding its checkpoint alone: while that node
 * is away the resume answers 503 `session.resume_failed` and the checkpoint stays.
 */
import type { Logger } from "pino";
import { SandpoolError } from "../../contract/error-codes.js";
import type {
  HibernationSandboxes,
  SavedSandbox,
  SaveRequest,
  SessionRestoreRequest,
} from "../../hibernate/hibernation-sandboxes.js";
import {
  type CheckpointKind,
  dockerCheckpointKindOf,
  SandboxLostInCheckpointError,
} from "../../runtime/sandbox-checkpoints.js";
import type { PoolSpec } from "../../runtime/sandbox-runtime.js";
import type { CheckpointRecord, Lease, LeaseKey, SandboxRecord } from "../../store/coordination/records.js";
import type { NodeSaveOutcome } from "../shared/node-api-wire.js";
import type { NodeView } from "../shared/node-registry.js";
import { type NodeClient, nodeEndpoint } from "./node-client.js";
import type { NodeDirectory } from "./node-directory.js";
import { placementOrder } from "./placement.js";
import type { RoutedPools } from "./routed-pools.js";

/** A files checkpoint's tar gives up after 120 s; a gVisor checkpoint takes seconds. */
const SAVE_MS = 150_000;
const RESTORE_FILES_MS = 150_000;
const NODE_CALL_MS = 5_000;

export interface NodeHibernationSandboxesDeps {
  pools: readonly PoolSpec[];
  routed: RoutedPools;
  nodes: NodeClient;
  directory: NodeDirectory;
  /** Every node mounts the same checkpoint directory (`hibernate.shared`). */
  shared: boolean;
  log: Logger;
}

export class NodeHibernationSandboxes implements HibernationSandboxes {
  constructor(private readonly deps: NodeHibernationSandboxesDeps) {}

  pool(name: string): PoolSpec | undefined {
    return this.deps.pools.find((pool) => pool.name === name);
  }

  kindOf(pool: PoolSpec): CheckpointKind | undefined {
    return dockerCheckpointKindOf(pool);
  }

  /** Not on a draining node without shared checkpoints: its checkpoint could resume there alone, and it takes no leases. */
  hibernatesIdle(lease: Lease): boolean {
    const node = this.holderOf(lease);
    return this.deps.shared || node === undefined || this.deps.directory.get(node)?.draining !== true;
  }

  /** The checkpoint is kept by the node holding the sandbox. */
  holderOf(lease: Lease): string | undefined {
    return lease.node ?? lease.sandbox.node;
  }

  async save({ key, lease, bounds }: SaveRequest): Promise<SavedSandbox> {
    const node = this.holderOf(lease);
    if (!node) throw new SandpoolError("session.not_hibernatable", "the session's sandbox names no node");
    const answer = await this.deps.nodes.nodeJson<NodeSaveOutcome>(node, {
      method: "POST",
      path: `/node/v1/sandboxes/${lease.sandbox.sandboxId}/checkpoint`,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ sessionId: key.sessionId, bounds }),
      timeoutMs: SAVE_MS,
      workspace: key.workspace,
    });
    const saved = answer.body;
    if (saved?.outcome === "lost") throw new SandboxLostInCheckpointError(saved.message);
    if (saved?.outcome !== "saved") {
      throw new SandpoolError("sandbox.bad_answer", "the node's answer to a checkpoint was not one");
    }
    return { kind: saved.kind, bytes: saved.bytes };
  }

  async committed(key: LeaseKey, checkpoint: CheckpointRecord): Promise<boolean> {
    let last: unknown;
    for (const node of this.storesOf(checkpoint)) {
      try {
        const answer = await this.deps.nodes.nodeJson<{ committed: boolean }>(node.id, {
          method: "GET",
          path: `/node/v1/checkpoints/${key.sessionId}`,
          timeoutMs: NODE_CALL_MS,
          workspace: key.workspace,
        });
        return answer.status === 200 && answer.body?.committed === true;
      } catch (error) {
        last = error;
      }
    }
    throw resumeFailed(`no node holding its checkpoint answers (${this.awayWhy(checkpoint)})`, 2, last);
  }

  async restore(request: SessionRestoreRequest): Promise<SandboxRecord> {
    const { checkpoint } = request;
    if (!this.deps.shared && !this.readyHolder(checkpoint)) {
      throw resumeFailed(`the node keeping its checkpoint is away (${this.awayWhy(checkpoint)})`, 5);
    }
    return checkpoint.kind === "files" ? this.restoreFiles(request) : this.restoreMemory(request);
  }

  retire(record: SandboxRecord): Promise<void> {
    return this.deps.routed.retire(record);
  }

  /** Asked of the node keeping it (or any, on a shared store); one that is away removes it itself later. */
  async deleteCheckpoint(key: LeaseKey, checkpoint: CheckpointRecord): Promise<void> {
    for (const node of this.storesOf(checkpoint)) {
      try {
        const answer = await this.deps.nodes.call(node.id, {
          method: "POST",
          path: `/node/v1/checkpoints/${key.sessionId}/delete`,
          timeoutMs: NODE_CALL_MS,
          workspace: key.workspace,
        });
        await answer.body.dump();
        return;
      } catch (error) {
        this.deps.log.debug({ err: error, node: node.id }, "a node could not delete a checkpoint");
      }
    }
    // Its node's reconciliation removes a checkpoint no hibernated session names.
    this.deps.log.warn(
      { session: key.sessionId, node: checkpoint.node },
      "could not delete a checkpoint: its node removes it when it reconciles",
    );
  }

  /** Each node reconciles its own checkpoint store. */
  reconcile(): Promise<number> {
    return Promise.resolve(0);
  }

  /**
   * A files checkpoint goes into a sandbox leased as for a new session (a warm one where a
   * node has it), on the checkpoint's node unless the store is shared; the lease names the
   * sandbox before its node restores into it.
   */
  private async restoreFiles({
    key,
    pool,
    checkpoint,
    hold,
    name,
  }: SessionRestoreRequest): Promise<SandboxRecord> {
    const among = this.deps.shared ? undefined : (node: NodeView) => node.id === checkpoint.node;
    const leased = await this.deps.routed
      .lease(pool, { ...hold, reuse: false }, among)
      .catch((error: unknown) => {
        throw resumeFailed(`no node could give it a sandbox of the '${pool.name}' pool`, 2, error);
      });
    const record = leased.record;
    try {
      await name(record);
      const answer = await this.deps.nodes.call(record.node!, {
        method: "POST",
        path: `/node/v1/sandboxes/${record.sandboxId}/restore`,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ sessionId: key.sessionId }),
        timeoutMs: RESTORE_FILES_MS,
        workspace: key.workspace,
      });
      await answer.body.dump();
      return record;
    } catch (error) {
      await this.retire(record).catch(() => undefined);
      throw error;
    }
  }

  /** A memory checkpoint into a new container under its own sandbox id, on the first node that can. */
  private async restoreMemory({ key, pool, checkpoint }: SessionRestoreRequest): Promise<SandboxRecord> {
    const order = this.deps.shared
      ? placementOrder(this.deps.directory.list(), pool)
      : [this.readyHolder(checkpoint)!];
    let last: unknown;
    for (const node of order) {
      try {
        const answer = await this.deps.nodes.nodeJson<{ record: SandboxRecord }>(node.id, {
          method: "POST",
          path: "/node/v1/restores",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            pool: pool.name,
            sessionId: key.sessionId,
            sandboxId: checkpoint.sandboxId,
            sandboxSessionId: checkpoint.sandboxSessionId,
          }),
          timeoutMs: pool.coldStartTimeoutMs + NODE_CALL_MS,
          workspace: key.workspace,
        });
        const restored = answer.body!.record;
        return {
          ...restored,
          node: node.id,
          endpoint: nodeEndpoint(node.id, restored.sandboxId, key.workspace),
        };
      } catch (error) {
        last = error;
        this.deps.log.debug({ err: error, node: node.id }, "a node could not restore a memory checkpoint");
        if (!unanswered(error)) continue; // that node refused: the next may serve
        // No answer (a timeout, a lost connection): the node may still be restoring it, and a
        // second copy of the session's memory must not run elsewhere. What it started goes,
        // and the resume is tried again later (the checkpoint stays).
        await this.deps.routed
          .retire({
            pool: pool.name,
            sandboxId: checkpoint.sandboxId,
            runtimeId: "",
            node: node.id,
            endpoint: nodeEndpoint(node.id, checkpoint.sandboxId, key.workspace),
          })
          .catch(() => undefined);
        break;
      }
    }
    if (last instanceof SandpoolError && last.code === "session.resume_failed") throw last;
    throw resumeFailed(
      order.length === 0 ? `no node serves the '${pool.name}' pool now` : "no node could restore it",
      2,
      last,
    );
  }

  /** The checkpoint's own node, when it is there to ask (ready or draining). */
  private readyHolder(checkpoint: CheckpointRecord): NodeView | undefined {
    const node = checkpoint.node === undefined ? undefined : this.deps.directory.get(checkpoint.node);
    return node && node.state !== "lost" ? node : undefined;
  }

  /** The nodes whose store holds the checkpoint: its own, and on a shared store any other there. */
  private storesOf(checkpoint: CheckpointRecord): NodeView[] {
    const holder = this.readyHolder(checkpoint);
    if (!this.deps.shared) return holder ? [holder] : [];
    const others = this.deps.directory
      .list()
      .filter((node) => node.state !== "lost" && node.id !== checkpoint.node);
    return holder ? [holder, ...others] : others;
  }

  private awayWhy(checkpoint: CheckpointRecord): string {
    return checkpoint.node === undefined ? "it names no node" : `node ${checkpoint.node}`;
  }
}

function resumeFailed(why: string, retryAfterSeconds: number, cause?: unknown): SandpoolError {
  return new SandpoolError("session.resume_failed", `the hibernated session could not be resumed: ${why}`, {
    retryAfterSeconds,
    ...(cause === undefined ? {} : { cause }),
  });
}

/** A node call that failed without the node's answer (its refusals carry their own codes). */
function unanswered(error: unknown): boolean {
  return (
    !(error instanceof SandpoolError) ||
    error.code === "sandbox.timeout" ||
    error.code === "sandbox.unreachable"
  );
}
