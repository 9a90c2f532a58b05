/**
 * The claim a replica holds on a session while it saves or restores it (`saving`,
 * `restoring`): it lapses unless renewed, so a replica that dies midway holds its session up
 * for seconds, and the next caller takes it over.
 */
import { randomBytes } from "node:crypto";
import type { LeaseStore } from "../store/coordination/lease-store.js";
import type { CheckpointRecord, LeaseKey } from "../store/coordination/records.js";

/**
 * A claim lasts this long unless its replica renews it (every CLAIM_RENEW_MS while the save
 * or restore runs): a replica that dies midway holds its session up for seconds, not minutes.
 */
export const CLAIM_MS = 10_000;
const CLAIM_RENEW_MS = 3_000;
/** How often a caller waiting for another replica's save or restore looks again. */
export const CLAIM_POLL_MS = 100;

/** A new claim's id: unguessable, so only its holder steps the session on. */
export const newClaimId = () => randomBytes(9).toString("base64url");

/**
 * Renews a claim while its work runs, so it lapses soon after this replica dies, not
 * while it works. A renewal that finds the claim gone (the session ended) stops.
 */
export function keepClaim(
  leases: Pick<LeaseStore, "stepHibernation">,
  now: () => number,
  key: LeaseKey,
  claim: { phase: "saving" | "restoring"; claimId: string; checkpoint: CheckpointRecord },
): { stop(): void } {
  const timer = setInterval(() => {
    leases
      .stepHibernation(key, {
        now: now(),
        from: [claim.phase],
        claimId: claim.claimId,
        to: { ...claim, claimUntil: now() + CLAIM_MS },
      })
      .then(
        (renewed) => renewed.outcome === "stepped" || clearInterval(timer),
        () => undefined,
      );
  }, CLAIM_RENEW_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
