/**
 * The warm pools' shared ledger: membership caps a pool's size across replicas (every
 * member with an expiry, so a crashed replica's sandboxes age out), and idle members wait
 * in a queue to be leased.
 *
 * A sandbox a replica is starting, or handing out to a session whose lease is not recorded
 * yet, carries an in-flight mark with a short expiry that the replica renews while it works.
 * A replica that dies (kill -9) stops renewing: its marks lapse, and reconciliation reclaims
 * what they name (src/pool/reclaim-in-flight.ts) long before the member's own expiry (an
 * hour, for a sandbox held for a session).
 */
import type { MemberHold, SandboxRecord } from "./records.js";

/** How a start is marked as it is counted (`addMember`). */
export interface StartMarks {
  /**
   * A start of warm-up: marked warming with the member's expiry, until `pushIdle` or
   * `removeMember` ends the mark: a lease that finds the pool at its cap then knows an idle
   * sandbox is on its way, whichever replica starts it.
   */
  warming?: boolean;
  /** The in-flight mark's expiry (epoch ms), which the starting replica renews. */
  inFlightUntil?: number;
}

/** A start or hand-out under way, and until when its replica last said so. */
export interface InFlightMark {
  sandboxId: string;
  until: number;
}

export interface PoolLedger {
  /**
   * Counts `sandboxId` against the pool if fewer than `maxTotal` unexpired members exist,
   * marked as `marks` says in the same step.
   */
  addMember(
    pool: string,
    sandboxId: string,
    maxTotal: number,
    expiresAt: number,
    now: number,
    marks?: StartMarks,
  ): Promise<boolean>;
  /** Moves the in-flight marks of `sandboxIds` to `until` (marks only: one ended is not set again). */
  renewInFlight(pool: string, sandboxIds: readonly string[], until: number, now: number): Promise<void>;
  /** Every in-flight mark of the pool, lapsed ones included (until reclaimed or ended). */
  listInFlight(pool: string): Promise<InFlightMark[]>;
  /** Ends a sandbox's in-flight mark: it is leased or idle now, accounted for elsewhere. */
  endInFlight(pool: string, sandboxId: string): Promise<void>;
  /**
   * Frees the place of a sandbox whose in-flight mark lapsed (its replica stopped renewing
   * it), with its marks, in one step; false (nothing changed) when the mark is gone, was
   * renewed meanwhile, or the sandbox is marked retiring (its destroy frees the place).
   */
  reclaimInFlight(pool: string, sandboxId: string, now: number): Promise<boolean>;
  /** Moves a member's expiry (a member only: one removed is not added back). */
  renewMember(pool: string, sandboxId: string, expiresAt: number, now: number): Promise<void>;
  /** Frees the member's place, and ends its warming, retiring or in-flight mark if it has one. */
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
  /**
   * Queues a started sandbox to be leased, ending its warming and in-flight marks in the same
   * step. With `membership`, only while it is still a member (its place not reclaimed), its
   * expiry moved to `membership.until`; false, and nothing queued, when it is not.
   */
  pushIdle(record: SandboxRecord, membership?: { until: number; now: number }): Promise<boolean>;
  /**
   * Parks a scrubbed sandbox that served a session of `record.owner`, for that workspace's
   * next lease, ending its retiring and in-flight marks in the same step; only while it is
   * still a member, its expiry moved to `membership.until`. False, and nothing parked, when
   * it is not a member.
   */
  parkIdle(record: SandboxRecord, membership: { until: number; now: number }): Promise<boolean>;
  /** The pool's parked sandboxes, newest first. */
  listParked(pool: string): Promise<SandboxRecord[]>;
  /** Atomically takes one particular parked sandbox (expiry, draining, reconciliation). */
  takeParked(pool: string, sandboxId: string): Promise<SandboxRecord | undefined>;
  /** Atomically takes the pool's longest-parked sandbox: its place is wanted by another workspace. */
  popParked(pool: string): Promise<SandboxRecord | undefined>;
  /** Atomically takes the oldest idle sandbox of the pool, if any. */
  popIdle(pool: string): Promise<SandboxRecord | undefined>;
  /**
   * Leases a sandbox of the pool in one atomic step: the workspace's own parked sandbox
   * (newest first) unless `hold.reuse` is false, else the oldest idle one; popped, its membership
   * held until `hold.until` (as `holdMember`), its workspace recorded as a holder, and marked
   * in flight until `hold.handOverBy` when given.
   */
  leaseIdle(pool: string, hold: MemberHold): Promise<SandboxRecord | undefined>;
  /**
   * Keeps a leased sandbox counted against its pool until `hold.until` (a member only: as
   * `renewMember`) and records its workspace among the pool's holders, which is how the
   * Redis store finds the workspaces whose leases it lists and reaps; marks it in flight
   * until `hold.handOverBy` when given. False when it is not a member (its place was
   * reclaimed): nothing is held then.
   */
  holdMember(pool: string, sandboxId: string, hold: MemberHold): Promise<boolean>;
  /** Atomically takes one particular idle sandbox (for draining or reconciliation). */
  takeIdle(pool: string, sandboxId: string): Promise<SandboxRecord | undefined>;
  listIdle(pool: string): Promise<SandboxRecord[]>;
  /** How many idle sandboxes the pool holds (what `leaseIdle` could take); read-only. */
  countIdle(pool: string): Promise<number>;
}
