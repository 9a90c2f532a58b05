/**
 * Hibernation on a node (roles edge and node, docs/hibernate.md): the edge keeps the
 * session's lease, claims, CPU settlement and metrics (src/hibernate/session-hibernation.ts);
 * the node does the sandbox steps an edge cannot, with its runtime's hibernation and its
 * checkpoint store (`hibernate.checkpointDir`: node-local, or a directory every node mounts
 * when `hibernate.shared`). Every step is made for one workspace: a held sandbox only for the
 * workspace it was leased to, a checkpoint only out of that workspace's part of the store.
 *
 * A files checkpoint is restored into one of the node's warm sandboxes, which the edge leases
 * first (so its lease names the sandbox before the restore runs); a memory checkpoint into a
 * new container under the session's own sandbox id, held here like a lease from then on and
 * counted against this node's share of its pool as one.
 */
import type { Logger } from "pino";
import { SandpoolError } from "../../contract/error-codes.js";
import { refusalError } from "../../hibernate/checkpoint-room.js";
import {
  CheckpointBoundError,
  type CheckpointBounds,
  type CheckpointStore,
} from "../../hibernate/checkpoint-store.js";
import {
  CheckpointMissingError,
  hibernateSandbox,
  NotHibernatableError,
  resumeSandbox,
} from "../../hibernate/hibernate-sandbox.js";
import { reconcileCheckpoints } from "../../hibernate/reconcile-checkpoints.js";
import { cpuBaselineMs } from "../../pool/cpu-baseline.js";
import { type SandboxCheckpoints, SandboxLostInCheckpointError } from "../../runtime/sandbox-checkpoints.js";
import type { PoolSpec, SandboxRuntime } from "../../runtime/sandbox-runtime.js";
import type { LeaseStore } from "../../store/coordination/lease-store.js";
import type { SandboxRecord } from "../../store/coordination/records.js";
import type { NodeSaveOutcome } from "../shared/node-api-wire.js";
import type { NodeSandboxes } from "./node-sandboxes.js";

export interface NodeHibernationDeps {
  pools: readonly PoolSpec[];
  sandboxes: NodeSandboxes;
  runtime: Pick<SandboxRuntime, "usage">;
  hibernation: SandboxCheckpoints;
  checkpoints: CheckpointStore;
  leases: Pick<LeaseStore, "getLease">;
  nodeId: string;
  /** Every node mounts the same checkpoint store (`hibernate.shared`). */
  shared: boolean;
  log: Logger;
  now?: () => number;
}

export class NodeHibernation {
  private readonly now: () => number;

  constructor(private readonly deps: NodeHibernationDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Checkpoints a held sandbox into the store; the sandbox goes once the checkpoint is committed. */
  async save(
    record: SandboxRecord,
    workspace: string,
    sessionId: string,
    bounds: CheckpointBounds,
  ): Promise<NodeSaveOutcome> {
    const pool = this.poolOf(record.pool);
    try {
      const saved = await hibernateSandbox({
        hibernation: this.deps.hibernation,
        store: this.deps.checkpoints,
        workspace,
        sessionId,
        runtimeId: record.runtimeId,
        sandboxId: record.sandboxId,
        sandboxSessionId: record.innerSessionId,
        pool,
        bounds,
        destroy: () => this.deps.sandboxes.destroy(record.sandboxId),
        now: this.now,
      });
      this.deps.log.info(
        { session: sessionId, workspace, kind: saved.kind, bytes: saved.bytes },
        "sandbox checkpointed for a hibernating session",
      );
      return { outcome: "saved", kind: saved.kind, bytes: saved.bytes };
    } catch (error) {
      if (error instanceof SandboxLostInCheckpointError) {
        await this.deps.sandboxes.destroy(record.sandboxId).catch(() => undefined);
        return { outcome: "lost", message: error.message };
      }
      if (error instanceof CheckpointBoundError) throw refusalError(error.reason, error.message);
      if (error instanceof NotHibernatableError) {
        throw new SandpoolError("session.not_hibernatable", error.message);
      }
      throw error;
    }
  }

  /** Puts the session's files checkpoint into a held (warm, just leased) sandbox's session. */
  async restoreFiles(record: SandboxRecord, workspace: string, sessionId: string): Promise<void> {
    const dir = await this.deps.checkpoints.locate(workspace, sessionId);
    if (!dir) throw missing(sessionId);
    await this.deps.hibernation.restoreFiles({
      runtimeId: record.runtimeId,
      sandboxId: record.sandboxId,
      sandboxSessionId: record.innerSessionId,
      dir,
    });
  }

  /** A memory checkpoint into a new container under its own sandbox id, held for the workspace. */
  async restoreMemory(
    poolName: string,
    workspace: string,
    sessionId: string,
    hibernated: { sandboxId: string; sandboxSessionId: string },
  ): Promise<SandboxRecord> {
    const pool = this.poolOf(poolName);
    if (this.deps.sandboxes.draining && this.deps.shared) {
      // Another node reads the same store: the session resumes there.
      throw new SandpoolError("capacity.exhausted", "this node is draining", { retryAfterSeconds: 1 });
    }
    const { sandboxId, sandboxSessionId } = hibernated;
    // Only what the session's lease says is being restored: the ids in the request name the
    // container this restore replaces, which must be none of this node's other sandboxes.
    const lease = await this.deps.leases.getLease({ workspace, sessionId });
    const restoring = lease?.hibernation;
    if (
      restoring?.phase !== "restoring" ||
      restoring.checkpoint.kind !== "memory" ||
      restoring.checkpoint.sandboxId !== sandboxId ||
      restoring.checkpoint.sandboxSessionId !== sandboxSessionId ||
      restoring.checkpoint.pool !== pool.name
    ) {
      throw new SandpoolError("session.not_found", "no such session being restored");
    }
    if (this.deps.sandboxes.holds(sandboxId) || this.deps.sandboxes.restoring.has(sandboxId)) {
      throw new SandpoolError("session.busy", "this sandbox is held or being restored here already");
    }
    this.deps.sandboxes.restoring.add(sandboxId);
    try {
      // Held against this node's share of the pool before its container starts: a full
      // share refuses (503 capacity.exhausted), and the edge asks the next node.
      const record = await this.deps.sandboxes.holdRestored(pool.name, workspace, async () => {
        const resumed = await resumeSandbox({
          hibernation: this.deps.hibernation,
          store: this.deps.checkpoints,
          workspace,
          sessionId,
          hibernated: {
            kind: "memory",
            bytes: 0,
            sandboxId,
            sandboxSessionId,
            pool: pool.name,
            hibernatedAt: 0,
          },
          pool,
          deadline: this.now() + pool.coldStartTimeoutMs,
          freshSandboxId: () => sandboxId,
          // A memory checkpoint brings its session back: none is opened.
          openSession: () => Promise.reject(new Error("a memory restore opens no session")),
          destroy: () => Promise.resolve(),
        }).catch((error: unknown) => {
          throw error instanceof CheckpointMissingError ? missing(sessionId) : error;
        });
        const cpuBaseMs = await cpuBaselineMs(this.deps.runtime, resumed.runtimeId);
        return {
          sandboxId,
          pool: pool.name,
          endpoint: resumed.endpoint,
          runtimeId: resumed.runtimeId,
          innerSessionId: sandboxSessionId,
          createdAt: this.now(),
          node: this.deps.nodeId,
          ...(cpuBaseMs === undefined ? {} : { cpuBaseMs }),
          // Its server listened again with the code's processes running (records.ts).
          neverReuse: true,
        };
      });
      this.deps.log.info({ session: sessionId, workspace, sandbox: sandboxId }, "memory checkpoint restored");
      return record;
    } finally {
      this.deps.sandboxes.restoring.delete(sandboxId);
    }
  }

  /** Whether the session's checkpoint is committed in this node's store. */
  async committed(workspace: string, sessionId: string): Promise<boolean> {
    return (await this.deps.checkpoints.locate(workspace, sessionId)) !== undefined;
  }

  delete(workspace: string, sessionId: string): Promise<void> {
    return this.deps.checkpoints.delete(workspace, sessionId);
  }

  /** What a crash left in the store goes (run with the node's reconciliation). */
  reconcile(): Promise<number> {
    return reconcileCheckpoints(this.deps.leases, this.deps.checkpoints, this.now());
  }

  private poolOf(name: string): PoolSpec {
    const pool = this.deps.pools.find((candidate) => candidate.name === name);
    if (!pool) throw new SandpoolError("session.not_hibernatable", `this node serves no pool '${name}'`);
    return pool;
  }
}

function missing(sessionId: string): SandpoolError {
  return new SandpoolError(
    "session.resume_failed",
    `the hibernated session could not be resumed: no checkpoint of session ${sessionId} on this node`,
    { retryAfterSeconds: 1 },
  );
}
