/**
 * Session leases, addressed by (workspace, session id): another workspace's id finds
 * nothing. A lease is kept with an expiry past its deadlines, so one whose gateway crashed
 * is still found by the reaper and then ages out.
 */
import type {
  CallEnd,
  CallMark,
  CallStart,
  CallStarted,
  HibernationStep,
  HibernationStepped,
  Lease,
  LeaseKey,
  QuietQuery,
  SessionEndUsage,
} from "./records.js";

export interface LeaseStore {
  /** Stores the lease; `usage` (usage-backlog.ts), the session's start record, is appended with it. */
  putLease(lease: Lease, usage?: string): Promise<void>;
  getLease(key: LeaseKey): Promise<Lease | undefined>;
  /**
   * Records activity at `now` (last activity never moves backwards). A call that begins
   * counts in and raises `busyUntil` to its deadline; the last call that ends clears it.
   * Returns the lease, or undefined if it is gone.
   */
  touchLease(key: LeaseKey, now: number, call?: CallMark): Promise<Lease | undefined>;
  /**
   * Begins a call in one atomic step (one round trip at most on the hot path): resolves the lease,
   * refuses one past its deadline, reserves the budget asked for (cut to what remains,
   * `budget_spent` when nothing does), and marks the session busy (as `touchLease` with
   * `{ begin: busyUntil }`). Only `started` changes anything.
   */
  beginCall(key: LeaseKey, start: CallStart): Promise<CallStarted>;
  /**
   * Ends a call in one atomic step: gives `refund` back to its day's budget (as
   * AdmissionStore's `refundBudget`) and records the activity and the call's end (as
   * `touchLease` with `{ end: true }`). False when the lease is gone (the refund is made anyway).
   */
  endCall(key: LeaseKey, end: CallEnd): Promise<boolean>;
  /**
   * Moves the session one step through hibernation, atomically (records.ts:
   * `hibernationStepRefusal`). A step that leaves the session without a running sandbox
   * drops every replica's copy of the lease, so no call is served from a copy meanwhile.
   */
  stepHibernation(key: LeaseKey, step: HibernationStep): Promise<HibernationStepped>;
  /**
   * Atomically removes the lease: of several callers, exactly one gets it and ends the session;
   * that one's `ended` record (usage-backlog.ts) is appended with the take, the others' not.
   */
  takeLease(key: LeaseKey, ended?: SessionEndUsage): Promise<TakenLease | undefined>;
  /** Leases whose idle or lifetime deadline has passed. */
  dueLeases(now: number, limit: number): Promise<LeaseKey[]>;
  /**
   * Running sessions (not hibernated, nor being saved or restored) quiet (records.ts:
   * `quietSince`) since their workspace's `query.cutoff` or earlier: the candidates of
   * automatic hibernation, read from an index kept with the leases, so a round costs what
   * is quiet, not every lease.
   */
  quietLeases(query: QuietQuery): Promise<Lease[]>;
  listLeases(): Promise<Lease[]>;
}

/**
 * A lease as its session's end took it. `copiedElsewhere`: another replica may still serve a
 * call from its cached copy until the end's broadcast reaches it (redis/lease-cache.ts), so
 * the end closes the sandbox session before it answers. Absent: only this replica ever held
 * a copy (or none did), and it dropped its own as it took the lease.
 */
export type TakenLease = Lease & { copiedElsewhere?: true };

/** The reads of leases across workspaces (the reaper's, hibernation's, reconciliation's). */
export type LeaseListings = Pick<LeaseStore, "dueLeases" | "quietLeases" | "listLeases">;
