/**
 * Hibernation's sandbox steps on one host (`--role all`): this host's pools, its runtime's
 * hibernation and its checkpoint store (docs/hibernate.md). A files checkpoint goes into a
 * sandbox the pool has ready (a warm one: no container start, which is what makes a files
 * resume cheaper than a cold start); a memory checkpoint into a new container under the
 * session's own sandbox id (PoolManager.startFor with a restore bring-up).
 */
import { SandpoolError } from "../contract/error-codes.js";
import type { LeasedSandbox } from "../pool/sandbox-pool.js";
import type { SandboxBringUp } from "../pool/sandbox-starter.js";
import type { SandboxCheckpoints } from "../runtime/sandbox-checkpoints.js";
import type { PoolSpec } from "../runtime/sandbox-runtime.js";
import type { LeaseStore } from "../store/coordination/lease-store.js";
import type { LeaseKey, MemberHold, SandboxRecord } from "../store/coordination/records.js";
import type { CheckpointStore } from "./checkpoint-store.js";
import { CheckpointMissingError, hibernateSandbox, resumeSandbox } from "./hibernate-sandbox.js";
import type {
  HibernationSandboxes,
  SavedSandbox,
  SaveRequest,
  SessionRestoreRequest,
} from "./hibernation-sandboxes.js";
import { reconcileCheckpoints } from "./reconcile-checkpoints.js";

/** What hibernation needs of the local pools. */
export interface HibernationPools {
  list(): PoolSpec[];
  lease(pool: PoolSpec, hold: MemberHold): Promise<LeasedSandbox>;
  holdMembership(record: SandboxRecord, hold: MemberHold): Promise<void>;
  startFor(
    pool: PoolSpec,
    hold: MemberHold,
    sandboxId: string,
    bringUp: SandboxBringUp,
  ): Promise<SandboxRecord | undefined>;
  retire(record: Pick<SandboxRecord, "pool" | "sandboxId" | "runtimeId">): Promise<void>;
}

export interface LocalHibernationDeps {
  leases: Pick<LeaseStore, "getLease">;
  pools: HibernationPools;
  hibernation: SandboxCheckpoints;
  checkpoints: CheckpointStore;
  /** Opens the session inside a fresh sandbox (a files resume). */
  createInnerSession(endpoint: string, timeoutMs: number): Promise<string>;
  now?: () => number;
}

export class LocalHibernationSandboxes implements HibernationSandboxes {
  private readonly now: () => number;

  constructor(private readonly deps: LocalHibernationDeps) {
    this.now = deps.now ?? Date.now;
  }

  pool(name: string): PoolSpec | undefined {
    return this.deps.pools.list().find((pool) => pool.name === name);
  }

  kindOf(pool: PoolSpec) {
    return this.deps.hibernation.checkpointKindOf(pool);
  }

  holderOf(): undefined {
    return undefined;
  }

  async save({ key, lease, pool, bounds }: SaveRequest): Promise<SavedSandbox> {
    const saved = await hibernateSandbox({
      hibernation: this.deps.hibernation,
      store: this.deps.checkpoints,
      workspace: key.workspace,
      sessionId: key.sessionId,
      runtimeId: lease.sandbox.runtimeId,
      sandboxId: lease.sandbox.sandboxId,
      sandboxSessionId: lease.sandbox.innerSessionId,
      pool,
      bounds,
      // Its place in the pool goes with it.
      destroy: () => this.deps.pools.retire(lease.sandbox),
      now: this.now,
    });
    return { kind: saved.kind, bytes: saved.bytes };
  }

  async committed(key: LeaseKey): Promise<boolean> {
    return (await this.deps.checkpoints.locate(key.workspace, key.sessionId)) !== undefined;
  }

  restore(request: SessionRestoreRequest): Promise<SandboxRecord> {
    return request.checkpoint.kind === "files" ? this.filesIntoPooledSandbox(request) : this.memory(request);
  }

  retire(record: SandboxRecord): Promise<void> {
    return this.deps.pools.retire(record);
  }

  deleteCheckpoint(key: LeaseKey): Promise<void> {
    return this.deps.checkpoints.delete(key.workspace, key.sessionId);
  }

  reconcile(): Promise<number> {
    return reconcileCheckpoints(this.deps.leases, this.deps.checkpoints, this.now());
  }

  /** A memory checkpoint: a new container under the session's own sandbox id. */
  private async memory({ key, pool, checkpoint, hold }: SessionRestoreRequest): Promise<SandboxRecord> {
    const record = await this.deps.pools.startFor(pool, hold, checkpoint.sandboxId, async (id, deadline) => {
      const resumed = await resumeSandbox({
        hibernation: this.deps.hibernation,
        store: this.deps.checkpoints,
        workspace: key.workspace,
        sessionId: key.sessionId,
        hibernated: checkpoint,
        pool,
        deadline,
        freshSandboxId: () => id,
        openSession: (started) =>
          this.deps.createInnerSession(started.endpoint, Math.max(1, deadline - this.now())),
        destroy: (runtimeId) => this.deps.pools.retire({ pool: pool.name, sandboxId: id, runtimeId }),
      });
      return { ...resumed, innerSessionId: resumed.sandboxSessionId };
    });
    if (!record) {
      throw new SandpoolError(
        "session.resume_failed",
        `the hibernated session could not be resumed: the '${pool.name}' pool is at capacity`,
        { retryAfterSeconds: 2 },
      );
    }
    return record;
  }

  /**
   * A files checkpoint into a sandbox the pool has ready, restored into its inner session
   * by the code's uid. The lease names the sandbox at once, so reconciliation counts it as
   * the session's however long the restore takes.
   */
  private async filesIntoPooledSandbox({
    key,
    pool,
    hold,
    name,
  }: SessionRestoreRequest): Promise<SandboxRecord> {
    const dir = await this.deps.checkpoints.locate(key.workspace, key.sessionId);
    if (!dir) throw new CheckpointMissingError(`no checkpoint of session ${key.sessionId}`);
    // A fresh sandbox only: whether a parked one may serve is the workspace's policy, not read here.
    const leased = await this.deps.pools.lease(pool, { ...hold, reuse: false });
    try {
      if (!leased.warm) await this.deps.pools.holdMembership(leased.record, hold);
      await name(leased.record);
      const { runtimeId, sandboxId, innerSessionId } = leased.record;
      await this.deps.hibernation.restoreFiles({
        runtimeId,
        sandboxId,
        sandboxSessionId: innerSessionId,
        dir,
      });
      return leased.record;
    } catch (error) {
      await this.deps.pools.retire(leased.record).catch(() => undefined);
      throw error;
    }
  }
}
