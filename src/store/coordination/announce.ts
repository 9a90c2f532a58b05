/**
 * Announcing a change that is already committed (a policy edit, a pool resize, a new key) to
 * the other replicas. The commit is the truth and the answer must say so: a failed announcement
 * must not turn a done change into an error, since every such cache also expires or reloads on
 * its own (policy within policyCacheTtlMs, pool sizes every 30 s, unknown keys within seconds).
 * Revocations are the exception and publish strictly: their answer promises "refused everywhere".
 */
import type { Broadcast } from "./broadcast.js";

export async function announceCommitted(
  store: Pick<Broadcast, "publish">,
  channel: string,
  message: string,
): Promise<boolean> {
  try {
    await store.publish(channel, message);
    return true;
  } catch {
    return false;
  }
}
