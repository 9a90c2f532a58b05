/** What a failed save means: whether it surely committed nothing, and whether it was refused at a bound. */
import { SandpoolError } from "../contract/error-codes.js";
import { SandboxLostInCheckpointError } from "../runtime/sandbox-checkpoints.js";
import type { HibernationRefusal } from "../store/coordination/records.js";
import { CheckpointBoundError } from "./checkpoint-store.js";

/**
 * A save's failure that says for sure nothing was committed: the sandbox was lost, the bound
 * refused it, or the pool cannot hibernate. Anything else (a timeout, a lost answer, a
 * failure after the commit) is checked against the store.
 */
export function definiteSaveFailure(error: unknown): boolean {
  if (error instanceof SandboxLostInCheckpointError || error instanceof CheckpointBoundError) return true;
  return (
    error instanceof SandpoolError &&
    (error.code === "session.not_hibernatable" ||
      error.code === "quota.hibernated_sessions" ||
      error.code === "capacity.checkpoint_space")
  );
}

/** A save refused at a bound (the workspace's, the store's), as the lease keeps it; else undefined. */
export function saveRefusalOf(error: unknown, at: number): HibernationRefusal | undefined {
  if (
    error instanceof SandpoolError &&
    (error.code === "quota.hibernated_sessions" || error.code === "capacity.checkpoint_space")
  )
    return { code: error.code, message: error.message, at };
  return undefined;
}
