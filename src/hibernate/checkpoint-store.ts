/**
 * Where hibernated sessions' checkpoints live (docs/hibernate.md). A checkpoint holds a
 * tenant's memory and files: it is kept per workspace, readable by the gateway alone, never
 * handed to another workspace, bounded per workspace, and deleted with its session.
 *
 * A checkpoint is written in two steps, so a process killed midway leaves no half checkpoint
 * that looks whole: `begin` gives an empty private directory, the runtime writes into it,
 * and `commit` makes it the session's checkpoint (replacing an older one). What `begin` gave
 * and nobody committed is removed by `sweepUncommitted`.
 */
import type { CheckpointRefusalReason } from "./checkpoint-room.js";

export interface CheckpointBounds {
  /** Hibernated sessions a workspace may keep (policy maxHibernatedSessions); absent: no bound. */
  maxCheckpoints?: number;
  /** Bytes a workspace's checkpoints may hold together; absent: no bound. */
  maxBytes?: number;
}

export interface CheckpointUsage {
  checkpoints: number;
  bytes: number;
}

export interface StoredCheckpoint {
  workspace: string;
  sessionId: string;
  bytes: number;
  /** Epoch milliseconds it was committed. */
  committedAt: number;
}

/**
 * A checkpoint refused at a bound (the workspace's, or the store's bytes and free disk:
 * checkpoint-room.ts): the session stays as it is (running), and says why.
 */
export class CheckpointBoundError extends Error {
  override readonly name = "CheckpointBoundError";

  constructor(
    message: string,
    readonly reason: CheckpointRefusalReason = "workspace_sessions",
  ) {
    super(message);
  }
}

export interface CheckpointStore {
  /** Where the store keeps checkpoints (for logs and docs). */
  readonly location: string;
  /**
   * An empty directory, mode 0700, for a new checkpoint of the session. Refused with
   * CheckpointBoundError when the workspace keeps `maxCheckpoints` others already or holds
   * `maxBytes` or more (a session's own older checkpoint does not count: it is replaced), or
   * when the store is at its own byte cap or its disk under its free floor.
   */
  begin(workspace: string, sessionId: string, bounds: CheckpointBounds): Promise<string>;
  /** Makes what was written into `dir` (from begin) the session's checkpoint; returns its bytes. */
  commit(workspace: string, sessionId: string, dir: string): Promise<number>;
  /** Drops an uncommitted directory (the checkpoint failed). */
  abandon(dir: string): Promise<void>;
  /** The session's committed checkpoint directory, looked up in its own workspace only. */
  locate(workspace: string, sessionId: string): Promise<string | undefined>;
  /** Deletes the session's checkpoint; an absent one is not an error. */
  delete(workspace: string, sessionId: string): Promise<void>;
  usage(workspace: string): Promise<CheckpointUsage>;
  /** Every committed checkpoint: what reconciliation compares with the hibernated sessions. */
  list(): Promise<StoredCheckpoint[]>;
  /** Removes uncommitted directories begun before `olderThan` (epoch ms); returns how many. */
  sweepUncommitted(olderThan: number): Promise<number>;
}
