/**
 * Admission counters shared by every replica: a workspace's concurrent-session slots, its
 * session rate window and its execution budget per UTC day. Slots carry an expiry, so a
 * holder that crashes ages out instead of leaking capacity.
 */
import type { AdmissionVerdict, CpuCharge, CpuCharged, SessionAdmission } from "./records.js";

export interface AdmissionStore {
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
  /**
   * Charges a sandbox's CPU to its workspace's day, in one atomic step: the CPU it burned
   * since the session's last reading (or its baseline) is added to the day's CPU total, and
   * the day's budget counter is raised to that total when it is below it, so a day is
   * charged the larger of its calls' wall time and its sandboxes' CPU time. Readings only
   * move forward: replicas reading the same sandbox charge each CPU second once. `final`
   * forgets the session's reading (it ended).
   */
  chargeCpu(workspace: string, charge: CpuCharge): Promise<CpuCharged>;

  /**
   * Read-only, for explain: the session-rate window as `takeRate` would see it at `now`:
   * events in the last `windowMs` (an event leaves it exactly `windowMs` after it happened)
   * and the oldest one's time, null when the window is empty. Takes nothing.
   */
  countRate(
    workspace: string,
    windowMs: number,
    now: number,
  ): Promise<{ count: number; oldestAt: number | null }>;
}
