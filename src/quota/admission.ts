/**
 * Admission (pipeline step 6): may this workspace start another session, or run another
 * call, under its quotas? Concurrent sessions are slots held for the session's lifetime
 * (released on every path that ends it); session creations are counted in a sliding
 * one-minute window; execution time is a per-day budget in milliseconds (UTC days).
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

  /** Refuses a call (or a session) once the day's execution budget is spent. */
  async checkExecBudget(policy: EffectivePolicy): Promise<void> {
    const now = this.now();
    const usedMs = await this.store.readBudget(policy.workspace, budgetDay(now));
    if (usedMs >= policy.execSecondsPerDay * 1000) {
      throw new SandpoolError(
        "quota.exec_budget",
        `the workspace has used its ${policy.execSecondsPerDay} execution seconds for today`,
        { retryAfterSeconds: secondsUntilNextDay(now) },
      );
    }
  }

  chargeExec(workspace: string, milliseconds: number): Promise<number> {
    return this.store.chargeBudget(workspace, budgetDay(this.now()), Math.max(0, Math.round(milliseconds)));
  }
}
