/**
 * Admission (pipeline step 6): may this workspace start another session, or run another
 * call, under its quotas? Concurrent sessions are slots held for the session's lifetime
 * (released on every path that ends it); session creations are counted in a sliding
 * one-minute window; execution time is a per-day budget in milliseconds (UTC days), reserved
 * before a call runs and settled with the wall time the gateway measured once it is over.
 */
import { SandpoolError } from "../contract/error-codes.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { CoordinationStore } from "../store/coordination/coordination-store.js";

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

export function budgetDay(now: number): string {
  return new Date(now).toISOString().slice(0, 10);
}

function secondsUntilNextDay(now: number): number {
  return Math.ceil((DAY_MS - (now % DAY_MS)) / 1000);
}

export class Admission {
  constructor(
    private readonly store: CoordinationStore,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Admits a new session or throws a 429. The slot is held until `slotExpiresAt` at the
   * latest (the session's maximum lifetime), so a gateway that dies cannot leak it.
   */
  async admitSession(policy: EffectivePolicy, sessionId: string, slotExpiresAt: number): Promise<void> {
    await this.checkExecBudget(policy);
    const now = this.now();
    const admitted = await this.store.acquireSlot(
      policy.workspace,
      sessionId,
      policy.maxConcurrentSessions,
      slotExpiresAt,
      now,
    );
    if (!admitted) {
      throw new SandpoolError(
        "quota.concurrent_sessions",
        `the workspace already has ${policy.maxConcurrentSessions} sessions open`,
        { retryAfterSeconds: 1 },
      );
    }
    const waitMs = await this.store.takeRate(policy.workspace, policy.sessionsPerMinute, MINUTE_MS, now);
    if (waitMs > 0) {
      await this.store.releaseSlot(policy.workspace, sessionId);
      throw new SandpoolError(
        "quota.session_rate",
        `the workspace may create ${policy.sessionsPerMinute} sessions a minute`,
        { retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) },
      );
    }
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
   * Reserves a call's time against the day's budget before it runs: all of `requestedMs`
   * while that much remains, else what remains; refused (429) when nothing does. Parallel
   * calls each reserve atomically, so together they cannot be granted more than the budget.
   */
  async reserveExec(policy: EffectivePolicy, requestedMs: number): Promise<ExecReservation> {
    const now = this.now();
    const day = budgetDay(now);
    const grantedMs = await this.store.reserveBudget(
      policy.workspace,
      day,
      Math.max(1, Math.ceil(requestedMs)),
      policy.execSecondsPerDay * 1000,
    );
    if (grantedMs <= 0) throw budgetSpent(policy, now);
    return { workspace: policy.workspace, day, grantedMs };
  }

  /**
   * Settles a reservation once the call is over: the call is charged the wall time it took,
   * at most what was granted, and the rest goes back to the day it was reserved on. Returns
   * the milliseconds charged. (A gateway that dies before settling leaves the whole
   * reservation charged: it fails safe.)
   */
  async settleExec(reservation: ExecReservation, measuredMs: number): Promise<number> {
    const chargedMs = Math.min(reservation.grantedMs, Math.max(0, Math.ceil(measuredMs)));
    const refundMs = reservation.grantedMs - chargedMs;
    if (refundMs > 0) await this.store.refundBudget(reservation.workspace, reservation.day, refundMs);
    return chargedMs;
  }
}

/** Time reserved for one call: settled with `settleExec` when the call is over. */
export interface ExecReservation {
  workspace: string;
  /** The UTC day the time was reserved on (a call may end on the next). */
  day: string;
  grantedMs: number;
}

function budgetSpent(policy: EffectivePolicy, now: number): SandpoolError {
  return new SandpoolError(
    "quota.exec_budget",
    `the workspace has used its ${policy.execSecondsPerDay} execution seconds for today`,
    { retryAfterSeconds: secondsUntilNextDay(now) },
  );
}
