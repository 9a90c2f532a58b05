/**
 * Admission (pipeline step 8, admit): may this workspace start another session, or run another
 * call, under its quotas? Concurrent sessions are slots held for the session's lifetime
 * (released on every path that ends it); session creations are counted in a sliding
 * one-minute window; execution time is a per-day budget in milliseconds (UTC days), reserved
 * before a call runs and settled with the wall time the gateway measured once it is over.
 */
import type { SandpoolError } from "../contract/error-codes.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { AdmissionStore } from "../store/coordination/admission-store.js";
import type { CpuCharged } from "../store/coordination/records.js";
import {
  type ExecAdmissionPreview,
  previewExec,
  previewSession,
  type SessionAdmissionPreview,
} from "./admission-preview.js";
import {
  budgetDay,
  budgetSpent,
  type ExecBudgetRequest,
  MINUTE_MS,
  rateReached,
  slotsTaken,
} from "./quota-refusals.js";

export { budgetDay, type ExecBudgetRequest, MINUTE_MS } from "./quota-refusals.js";

export class Admission {
  constructor(
    private readonly store: AdmissionStore,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Admits a new session or throws a 429, in one atomic step of the store: the day's budget
   * is not spent, a slot is free (then held until `slotExpiresAt` at the latest, the
   * session's maximum lifetime, so a gateway that dies cannot leak it), and the session
   * rate allows one more. A refusal takes nothing.
   */
  async admitSession(policy: EffectivePolicy, sessionId: string, slotExpiresAt: number): Promise<void> {
    const now = this.now();
    const verdict = await this.store.admitSession(policy.workspace, {
      token: sessionId,
      slotLimit: policy.maxConcurrentSessions,
      slotExpiresAt,
      now,
      ratePerWindow: policy.sessionsPerMinute,
      rateWindowMs: MINUTE_MS,
      budgetDay: budgetDay(now),
      budgetLimitMs: policy.execSecondsPerDay * 1000,
    });
    if (verdict.admitted) return;
    if (verdict.refused === "exec_budget") throw budgetSpent(policy, now);
    if (verdict.refused === "concurrent_sessions") throw slotsTaken(policy);
    throw rateReached(policy, verdict.waitMs);
  }

  /**
   * What `admitSession` would answer now, taking nothing (explain): the same three checks in
   * the same order, each with what is used and the limit.
   */
  previewSession(policy: EffectivePolicy): Promise<SessionAdmissionPreview> {
    return previewSession(this.store, policy, this.now());
  }

  /** What a call asking `requestedMs` of the day's budget would be granted now, reserving nothing. */
  previewExec(policy: EffectivePolicy, requestedMs: number): Promise<ExecAdmissionPreview> {
    const request = this.execRequest(policy, requestedMs);
    return previewExec(this.store, policy, request, this.now());
  }

  releaseSession(workspace: string, sessionId: string): Promise<void> {
    return this.store.releaseSlot(workspace, sessionId);
  }

  /** Refuses a new session once the day's execution budget is spent. */
  async checkExecBudget(policy: EffectivePolicy): Promise<void> {
    const now = this.now();
    const usedMs = await this.store.readBudget(policy.workspace, budgetDay(now));
    if (usedMs >= policy.execSecondsPerDay * 1000) throw budgetSpent(policy, now);
  }

  /**
   * What a call asks of the day's budget before it runs: all of `requestedMs` while that much
   * remains, else what remains, refused when nothing does. The store reserves it atomically
   * (`reserveBudget`, or with the call's begin, `beginCall`), so parallel calls together
   * cannot be granted more than the budget.
   */
  execRequest(policy: EffectivePolicy, requestedMs: number, now = this.now()): ExecBudgetRequest {
    return {
      day: budgetDay(now),
      requestedMs: Math.max(1, Math.ceil(requestedMs)),
      limitMs: policy.execSecondsPerDay * 1000,
    };
  }

  /** The 429 of a call that found the day's budget spent. */
  budgetSpent(policy: EffectivePolicy): SandpoolError {
    return budgetSpent(policy, this.now());
  }

  /**
   * Reserves a call's time against the day's budget before it runs (see `execRequest`), on
   * its own. A call on a session reserves with its begin instead (SessionLifecycle.beginCall),
   * under the same rules, in the same round trip.
   */
  async reserveExec(policy: EffectivePolicy, requestedMs: number): Promise<ExecReservation> {
    const request = this.execRequest(policy, requestedMs);
    const grantedMs = await this.store.reserveBudget(
      policy.workspace,
      request.day,
      request.requestedMs,
      request.limitMs,
    );
    if (grantedMs <= 0) throw this.budgetSpent(policy);
    return { workspace: policy.workspace, day: request.day, grantedMs };
  }

  /**
   * Charges a session's sandbox CPU reading to its workspace's day (AdmissionStore.chargeCpu):
   * the CPU burned since the session's last reading, counted from `baseMs` (the sandbox's
   * CPU when it became ready) on the first one. `final` when the session ended (its reading
   * undefined when none could be taken: the session is forgotten all the same).
   */
  chargeCpu(
    lease: { workspace: string; sessionId: string; sandbox: { cpuBaseMs?: number } },
    cpuSeconds: number | undefined,
    final = false,
  ): Promise<CpuCharged> {
    return this.store.chargeCpu(lease.workspace, {
      sessionId: lease.sessionId,
      ...(cpuSeconds === undefined ? {} : { cpuMs: cpuSeconds * 1000 }),
      ...(lease.sandbox.cpuBaseMs === undefined ? {} : { baseMs: lease.sandbox.cpuBaseMs }),
      day: budgetDay(this.now()),
      final,
    });
  }

  /** Settles a reservation made by `reserveExec` (see `settlement`); returns the ms charged. */
  async settleExec(reservation: ExecReservation, measuredMs: number): Promise<number> {
    const { chargedMs, refundMs } = settlement(reservation, measuredMs);
    if (refundMs > 0) await this.store.refundBudget(reservation.workspace, reservation.day, refundMs);
    return chargedMs;
  }
}

/**
 * How a reservation is settled once the call is over: the call is charged the wall time it
 * took, at most what was granted, and the rest goes back to the day it was reserved on. (A
 * gateway that dies before settling leaves the whole reservation charged: it fails safe.)
 */
export function settlement(
  reservation: ExecReservation,
  measuredMs: number,
): { chargedMs: number; refundMs: number } {
  const chargedMs = Math.min(reservation.grantedMs, Math.max(0, Math.ceil(measuredMs)));
  return { chargedMs, refundMs: reservation.grantedMs - chargedMs };
}

/** Time reserved for one call: settled with `settleExec` when the call is over. */
export interface ExecReservation {
  workspace: string;
  /** The UTC day the time was reserved on (a call may end on the next). */
  day: string;
  grantedMs: number;
}
