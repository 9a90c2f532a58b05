/**
 * What a crash leaves in a checkpoint store goes (docs/hibernate.md): directories begun and
 * never committed, and committed checkpoints no hibernated session names (its session ended,
 * or resumed, while the process that would have deleted it died). Run by whoever owns the
 * store: a gateway on one host, each node of an edge deployment (on a shared store, every
 * node: deleting is idempotent).
 */
import type { LeaseStore } from "../store/coordination/lease-store.js";
import type { CheckpointStore } from "./checkpoint-store.js";

/** A checkpoint no hibernated session names is removed once it is this old (a crash's leftover). */
export const STRAY_CHECKPOINT_MS = 60_000;
/**
 * A directory begun and not committed is removed once its last change is this old: well past
 * the longest a save may take (a files tar gives up after 120 s, an edge's save after 150 s),
 * since nothing touches it while a large tar or memory image is written into it.
 */
export const UNCOMMITTED_CHECKPOINT_MS = 10 * 60_000;

/** Returns how many checkpoints and begun directories were removed. */
export async function reconcileCheckpoints(
  leases: Pick<LeaseStore, "getLease">,
  checkpoints: CheckpointStore,
  now: number,
): Promise<number> {
  let removed = await checkpoints.sweepUncommitted(now - UNCOMMITTED_CHECKPOINT_MS);
  for (const stored of await checkpoints.list()) {
    if (stored.committedAt > now - STRAY_CHECKPOINT_MS) continue;
    const lease = await leases.getLease({ workspace: stored.workspace, sessionId: stored.sessionId });
    if (lease?.hibernation) continue;
    await checkpoints.delete(stored.workspace, stored.sessionId);
    removed++;
  }
  return removed;
}
