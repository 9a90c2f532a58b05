/**
 * Whether a checkpoint store has room for one more checkpoint: the workspace's own bounds
 * (policy maxHibernatedSessions) and the store's (config `hibernate.maxStoreBytes`, and
 * `hibernate.minFreeBytes` of free disk under it). A gVisor checkpoint is as large as the
 * memory its sandbox holds, so without the store's bounds hibernation could fill a node's
 * disk, and with it the engine's and every sandbox's. A refusal leaves the session running;
 * its reason is a metric label (sandpool_hibernation_refusals_total) and decides the answer's
 * code (`toSandpoolError`).
 */
import { SandpoolError } from "../contract/error-codes.js";

/** Why a checkpoint was refused: one value each, so the metric's labels stay a fixed few. */
export const CHECKPOINT_REFUSAL_REASONS = [
  "workspace_sessions",
  "workspace_bytes",
  "store_bytes",
  "disk_free",
] as const;
export type CheckpointRefusalReason = (typeof CHECKPOINT_REFUSAL_REASONS)[number];

/** The store's own bounds (config `hibernate`); absent: none. */
export interface StoreLimits {
  /** Bytes the whole store may hold, every workspace's checkpoints and those being written. */
  maxBytes?: number;
  /** Free bytes the store's file system must keep: no checkpoint begins below it. */
  minFreeBytes?: number;
}

/** What the store holds and has left when a checkpoint would begin. */
export interface CheckpointRoom {
  /** Checkpoints the workspace keeps, other than the session's own (which is replaced), and being written. */
  workspaceCheckpoints: number;
  /** Bytes of the workspace's checkpoints, other than the session's own. */
  workspaceBytes: number;
  /** Bytes of everything in the store. */
  storeBytes: number;
  /** Bytes free for this process on the store's file system. */
  freeBytes: number;
}

export interface CheckpointRefusal {
  reason: CheckpointRefusalReason;
  message: string;
}

/** The first bound `room` is at or over, or undefined when a checkpoint may begin. */
export function checkpointRefusal(
  workspace: string,
  room: CheckpointRoom,
  /** The workspace's bounds (CheckpointBounds of checkpoint-store.ts, which imports this file). */
  bounds: { maxCheckpoints?: number; maxBytes?: number },
  limits: StoreLimits,
): CheckpointRefusal | undefined {
  if (bounds.maxCheckpoints !== undefined && room.workspaceCheckpoints >= bounds.maxCheckpoints) {
    return {
      reason: "workspace_sessions",
      message: `workspace ${workspace} keeps ${room.workspaceCheckpoints} hibernated sessions, its bound (maxHibernatedSessions ${bounds.maxCheckpoints})`,
    };
  }
  if (bounds.maxBytes !== undefined && room.workspaceBytes >= bounds.maxBytes) {
    return {
      reason: "workspace_bytes",
      message: `workspace ${workspace}'s checkpoints hold ${room.workspaceBytes} bytes, its bound (${bounds.maxBytes})`,
    };
  }
  if (limits.maxBytes !== undefined && room.storeBytes >= limits.maxBytes) {
    return {
      reason: "store_bytes",
      message: `the checkpoint store holds ${room.storeBytes} bytes, its cap (hibernate.maxStoreBytes ${limits.maxBytes}); the session keeps running`,
    };
  }
  if (limits.minFreeBytes !== undefined && room.freeBytes < limits.minFreeBytes) {
    return {
      reason: "disk_free",
      message: `the checkpoint store's disk has ${room.freeBytes} bytes free, under its floor (hibernate.minFreeBytes ${limits.minFreeBytes}); the session keeps running`,
    };
  }
  return undefined;
}

/**
 * The answer for a refusal: a workspace at its own bound is its quota (429
 * `quota.hibernated_sessions`); a store out of room is this deployment's capacity (503
 * `capacity.checkpoint_space`, retried later: sessions that end free their checkpoints).
 */
export function refusalError(
  reason: CheckpointRefusalReason,
  message: string,
  cause?: unknown,
): SandpoolError {
  const options = cause === undefined ? {} : { cause };
  return reason === "workspace_sessions" || reason === "workspace_bytes"
    ? new SandpoolError("quota.hibernated_sessions", message, options)
    : new SandpoolError("capacity.checkpoint_space", message, { ...options, retryAfterSeconds: 60 });
}
