/**
 * The narrow interface behind all shared, fast-changing state: admission counters, the
 * warm pool and the leases. The memory implementation serves dev mode and unit tests; the
 * Redis one serves any number of replicas. Both pass one shared test suite.
 *
 * Everything with an owner is kept with an expiry (slots, pool members, leases), so a
 * holder that crashes ages out instead of leaking capacity.
 */
import type { PoolDemandExchange } from "./pool-demand-exchange.js";
import type {
  AdmissionVerdict,
  CallEnd,
  CallMark,
  CallStart,
  CallStarted,
  Lease,
  LeaseKey,
  MemberHold,
  SandboxRecord,
  SessionAdmission,
} from "./records.js";

/** Pools' shared lease and start counts come from PoolDemandExchange (pool-demand-exchange.ts). */
export interface CoordinationStore extends PoolDemandExchange {
  // Admission: concurrent-session slots, session rate, execution budget.
  /** Takes a slot for `token` if fewer than `limit` unexpired slots are held. */
  acquireSlot(
    workspace: string,
    token: string,
    limit: number,
    expiresAt: number,
    now: number,
  ): Promise<boolean>;
  releaseSlot(workspace: string, token: string): Promise<void>;
  /**
   * Admits a new session in one atomic step (CreateSession's admission, one round trip):
   * refused when the day's budget is spent, else takes a slot under the limit, else counts
   * the session in the rate window. A refusal takes nothing.
   */
  admitSession(workspace: string, admission: SessionAdmission): Promise<AdmissionVerdict>;
  countSlots(workspace: string, now: number): Promise<number>;
  /** Records one event in a sliding window; 0 if allowed, else milliseconds until one would be. */
  takeRate(workspace: string, limit: number, windowMs: number, now: number): Promise<number>;
  /**
   * Reserves up to `requestedMs` of a workspace's execution budget for `day` (at most
   * `limitMs` a day) in one atomic step, so parallel calls cannot together overshoot it.
   * Returns the milliseconds granted: min(requested, what remains), 0 when nothing remains
   * (and then nothing is reserved).
   */
  reserveBudget(workspace: string, day: string, requestedMs: number, limitMs: number): Promise<number>;
  /**
   * Gives back the unused part of a reservation made for `day`; the day's total never
   * drops below zero. Returns the new total. A reservation never settled stays charged.
   */
  refundBudget(workspace: string, day: string, milliseconds: number): Promise<number>;
  /** Milliseconds charged (reserved, net of refunds) for `day`. */
  readBudget(workspace: string, day: string): Promise<number>;

  // Pool membership caps a pool's size; idle members wait to be leased.
  /** Counts `sandboxId` against the pool if fewer than `maxTotal` unexpired members exist. */
  addMember(
    pool: string,
    sandboxId: string,
    maxTotal: number,
    expiresAt: number,
    now: number,
  ): Promise<boolean>;
  renewMember(pool: string, sandboxId: string, expiresAt: number): Promise<void>;
  removeMember(pool: string, sandboxId: string): Promise<void>;
  countMembers(pool: string, now: number): Promise<number>;
  /** The members whose expiry is after `now`. */
  listMembers(pool: string, now: number): Promise<string[]>;
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

  // Leases, addressed by (workspace, session id): another workspace's id finds nothing.
  putLease(lease: Lease): Promise<void>;
  getLease(key: LeaseKey): Promise<Lease | undefined>;
  /**
   * Records activity at `now` (last activity never moves backwards). A call that begins
   * counts in and raises `busyUntil` to its deadline; the last call that ends clears it.
   * Returns the lease, or undefined if it is gone.
   */
  touchLease(key: LeaseKey, now: number, call?: CallMark): Promise<Lease | undefined>;
  /**
   * Begins a call in one atomic step (one round trip on the hot path): resolves the lease,
   * refuses one past its deadline, reserves the budget asked for (cut to what remains,
   * `budget_spent` when nothing does), and marks the session busy (as `touchLease` with
   * `{ begin: busyUntil }`). Only `started` changes anything.
   */
  beginCall(key: LeaseKey, start: CallStart): Promise<CallStarted>;
  /**
   * Ends a call in one atomic step: gives `refund` back to its day's budget (as
   * `refundBudget`) and records the activity and the call's end (as `touchLease` with
   * `{ end: true }`). False when the lease is gone (the refund is made anyway).
   */
  endCall(key: LeaseKey, end: CallEnd): Promise<boolean>;
  /** Atomically removes the lease: of several callers, exactly one gets it and ends the session. */
  takeLease(key: LeaseKey): Promise<Lease | undefined>;
  /** Leases whose idle or lifetime deadline has passed. */
  dueLeases(now: number, limit: number): Promise<LeaseKey[]>;
  listLeases(): Promise<Lease[]>;

  // Read-only views for explain (src/explain/): what a call would meet, taking nothing and
  // touching no expiry. Kept in one block so the split of this interface by concern can move them.
  /**
   * The session-rate window as `takeRate` would see it at `now`: events in the last
   * `windowMs` (an event leaves it exactly `windowMs` after it happened) and the oldest one's
   * time, null when the window is empty.
   */
  countRate(
    workspace: string,
    windowMs: number,
    now: number,
  ): Promise<{ count: number; oldestAt: number | null }>;
  /** How many idle sandboxes the pool holds (what `leaseIdle` could take). */
  countIdle(pool: string): Promise<number>;

  // Broadcast between replicas (policy invalidation).
  publish(channel: string, message: string): Promise<void>;
  subscribe(channel: string, handler: (message: string) => void): Promise<void>;

  close(): Promise<void>;
}
