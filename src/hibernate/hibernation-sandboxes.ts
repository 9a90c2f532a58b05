/**
 * The sandbox steps of hibernation (docs/hibernate.md): what SessionHibernation asks of
 * wherever sessions' sandboxes run. The orchestration (claims on the lease, CPU settlement,
 * metrics, usage records, bounds) is the same everywhere; only these steps differ: this
 * host's pools, runtime and checkpoint store (`--role all`, local-hibernation-sandboxes.ts),
 * or the nodes an edge routes to (src/roles/edge/node-hibernation-sandboxes.ts).
 */
import type { CheckpointKind } from "../runtime/sandbox-checkpoints.js";
import type { PoolSpec } from "../runtime/sandbox-runtime.js";
import type {
  CheckpointRecord,
  Lease,
  LeaseKey,
  MemberHold,
  SandboxRecord,
} from "../store/coordination/records.js";
import type { CheckpointBounds } from "./checkpoint-store.js";

export interface SaveRequest {
  key: LeaseKey;
  /** The running lease: its sandbox is saved. */
  lease: Lease;
  pool: PoolSpec;
  bounds: CheckpointBounds;
}

export interface SavedSandbox {
  kind: CheckpointKind;
  bytes: number;
}

export interface SessionRestoreRequest {
  key: LeaseKey;
  lease: Lease;
  pool: PoolSpec;
  checkpoint: CheckpointRecord;
  /** The restored sandbox's place is held as long as the session's slot. */
  hold: MemberHold;
  /**
   * Names the sandbox in the lease before the restore runs into it (a files checkpoint
   * into a pooled sandbox), so reconciliation counts it as the session's meanwhile.
   */
  name(record: SandboxRecord): Promise<void>;
}

export interface HibernationSandboxes {
  /** The pool of that name, where sessions' sandboxes run. */
  pool(name: string): PoolSpec | undefined;
  /** What hibernating a sandbox of the pool keeps; undefined: it cannot hibernate. */
  kindOf(pool: PoolSpec): CheckpointKind | undefined;
  /**
   * Whether a session idle for its policy's time should hibernate now (true when absent): an
   * edge without shared checkpoints leaves the sessions of draining nodes alone, since a
   * checkpoint kept there could only resume there.
   */
  hibernatesIdle?(lease: Lease): boolean;
  /** Where the session's checkpoint will be kept (a node id); undefined on one host. */
  holderOf(lease: Lease): string | undefined;
  /**
   * Checkpoints the lease's sandbox and, once the checkpoint is committed, removes it and
   * frees its pool place. Refusals leave the sandbox running (CheckpointBoundError at the
   * bound), but a sandbox gVisor ended midway (SandboxLostInCheckpointError). Any other
   * failure may hide a save that went through (a node's answer lost): the caller asks
   * `committed`.
   */
  save(request: SaveRequest): Promise<SavedSandbox>;
  /** Whether the session's checkpoint was committed (a save whose replica died midway). */
  committed(key: LeaseKey, checkpoint: CheckpointRecord): Promise<boolean>;
  /**
   * A running sandbox from the checkpoint, the checkpoint left in place: a files checkpoint
   * in a ready sandbox of the pool, a memory one in a new sandbox under its own sandbox id.
   * Throws a SandpoolError (`session.resume_failed`) or the failure; what it started for the
   * session is gone again then.
   */
  restore(request: SessionRestoreRequest): Promise<SandboxRecord>;
  /** Removes a sandbox and frees its pool place. */
  retire(record: SandboxRecord): Promise<void>;
  /** Deletes the session's checkpoint; an absent one is not an error. */
  deleteCheckpoint(key: LeaseKey, checkpoint: CheckpointRecord): Promise<void>;
  /**
   * What a crash left in the checkpoint store goes (reconcile-checkpoints.ts); returns how
   * many. Where the store is another process's (a node's), it reconciles its own: 0.
   */
  reconcile(): Promise<number>;
}
