/**
 * Reconciliation's reclaim of what a dead replica left in flight. A replica marks each
 * sandbox it starts, and each it hands out to a session whose lease it has yet to record,
 * with a short mark it renews while it works (src/pool/in-flight-marks.ts). A mark that
 * lapsed names a sandbox:
 * - leased (its lease recorded) or idle: handed over as it should be; the mark is ended;
 * - marked retiring: its session ended and its destroy is queued, which frees the place;
 * - anything else: its replica died (or stalled past the mark) between taking the place and
 *   handing it over, and no one will ever do either: its place is freed, and its container
 *   is destroyed by the caller at once, without waiting for the orphan grace.
 */
import type { Logger } from "pino";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";

export interface InFlightSeen {
  /** The sandboxes of recorded leases (every pool's). */
  leased: ReadonlySet<string>;
  /** The pool's idle sandboxes. */
  idle: ReadonlySet<string>;
}

/** Frees the places of the pool's lapsed in-flight sandboxes; returns their ids. */
export async function reclaimInFlight(
  store: Pick<PoolLedger, "listInFlight" | "endInFlight" | "reclaimInFlight">,
  pool: string,
  seen: InFlightSeen,
  now: number,
  log: Logger,
): Promise<string[]> {
  const reclaimed: string[] = [];
  for (const mark of await store.listInFlight(pool)) {
    if (mark.until > now) continue; // its replica still renews it: a start or hand-out under way
    if (seen.leased.has(mark.sandboxId) || seen.idle.has(mark.sandboxId)) {
      await store.endInFlight(pool, mark.sandboxId);
      continue;
    }
    // Checked again in the step that frees it: a mark renewed since it was read stays.
    if (await store.reclaimInFlight(pool, mark.sandboxId, now)) {
      log.warn(
        { pool, sandbox: mark.sandboxId, lapsedMs: now - mark.until },
        "reclaimed a sandbox whose replica stopped starting or handing it out",
      );
      reclaimed.push(mark.sandboxId);
    }
  }
  return reclaimed;
}
