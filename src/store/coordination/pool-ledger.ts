/**
 * The warm pools' shared ledger: membership caps a pool's size across replicas (every
 * member with an expiry, so a crashed replica's sandboxes age out), and idle members wait
 * in a queue to be leased.
 */
import type { MemberHold, SandboxRecord } from "./records.js";

export interface PoolLedger {
  /**
   * Counts `sandboxId` against the pool if fewer than `maxTotal` unexpired members exist.
   * `warming` (a start of warm-up) also marks it warming, in the same step and with the same
   * expiry, until `pushIdle` or `removeMember` ends the mark: a lease that finds the pool at
   * its cap then knows an idle sandbox is on its way, whichever replica starts it.
   */
  addMember(
    pool: string,
    sandboxId: string,
    maxTotal: number,
    expiresAt: number,
    now: number,
    warming?: boolean,
  ): Promise<boolean>;
  /** Moves a member's expiry (a member only: one removed is not added back). */
  renewMember(pool: string, sandboxId: string, expiresAt: number, now: number): Promise<void>;
  /** Frees the member's place, and ends its warming or retiring mark if it has one. */
  removeMember(pool: string, sandboxId: string): Promise<void>;
  /**
   * Marks a member whose session ended as waiting to be destroyed, until `removeMember` or
   * `expiresAt`: its place frees soon, which a lease that finds the pool at its cap waits for.
   */
  markRetiring(pool: string, sandboxId: string, expiresAt: number, now: number): Promise<void>;
  /** The pool's members marked retiring (unexpired), on every replica. */
  countRetiring(pool: string, now: number): Promise<number>;
  countMembers(pool: string, now: number): Promise<number>;
  /** The pool's warm-up starts under way (marked, unexpired), on every replica. */
  countWarming(pool: string, now: number): Promise<number>;
  /** The members whose expiry is after `now`. */
  listMembers(pool: string, now: number): Promise<string[]>;
  /** Queues a started sandbox to be leased, ending its warming mark in the same step. */
  pushIdle(record: SandboxRecord): Promise<void>;
  /** Atomically takes the oldest idle sandbox of the pool, if any. */
  popIdle(pool: string): Promise<SandboxRecord | undefined>;
  /**
   * Leases the oldest idle sandbox of the pool in one atomic step: popped, its membership
   * held until `hold.until` (as `holdMember`), its workspace recorded as a holder.
   */
  leaseIdle(pool: string, hold: MemberHold): Promise<SandboxRecord | undefined>;
  /**
   * Keeps a leased sandbox counted against its pool until `hold.until` (a member only: as
   * `renewMember`) and records its workspace among the pool's holders, which is how the
   * Redis store finds the workspaces whose leases it lists and reaps.
   */
  holdMember(pool: string, sandboxId: string, hold: MemberHold): Promise<void>;
  /** Atomically takes one particular idle sandbox (for draining or reconciliation). */
  takeIdle(pool: string, sandboxId: string): Promise<SandboxRecord | undefined>;
  listIdle(pool: string): Promise<SandboxRecord[]>;
  /** How many idle sandboxes the pool holds (what `leaseIdle` could take); read-only. */
  countIdle(pool: string): Promise<number>;
}
