/**
 * The quotas' shared vocabulary: the UTC day a budget counts, what a call asks of it, and
 * the 429s admission answers. Admission and its read-only preview (explain) both use them.
 */
import { SandpoolError } from "../contract/error-codes.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import { type CeilingField, ceilingOf, policyFields } from "../policy-schema/policy-fields.js";

/**
 * Which setting raises a quota, said in the refusal itself: an operator reading a 429 in a
 * client's log should not need the docs to find the knob.
 */
export function raisedBy(field: CeilingField): string {
  return (
    `raise it with \`sandpool policy set <workspace> --${policyFields[field].flag} <n>\`, ` +
    `up to the deployment's ceiling policy.${ceilingOf(field)}`
  );
}

export const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** The last day named, and where it starts: every call asks, and nearly all on the same day. */
let lastDay = { start: 0, name: "1970-01-01" };

/** The UTC day of `now`, as YYYY-MM-DD. */
export function budgetDay(now: number): string {
  if (now < lastDay.start || now >= lastDay.start + DAY_MS) {
    const start = now - (((now % DAY_MS) + DAY_MS) % DAY_MS);
    lastDay = { start, name: new Date(start).toISOString().slice(0, 10) };
  }
  return lastDay.name;
}

function secondsUntilNextDay(now: number): number {
  return Math.ceil((DAY_MS - (now % DAY_MS)) / 1000);
}

/** What a call asks to reserve against its workspace's budget of `day`. */
export interface ExecBudgetRequest {
  day: string;
  requestedMs: number;
  limitMs: number;
}

export function budgetSpent(policy: EffectivePolicy, now: number): SandpoolError {
  return new SandpoolError(
    "quota.exec_budget",
    `the workspace has used its ${policy.execSecondsPerDay} execution seconds for today (${raisedBy("execSecondsPerDay")})`,
    { retryAfterSeconds: secondsUntilNextDay(now) },
  );
}

export function slotsTaken(policy: EffectivePolicy): SandpoolError {
  return new SandpoolError(
    "quota.concurrent_sessions",
    `the workspace already has ${policy.maxConcurrentSessions} sessions open (${raisedBy("maxConcurrentSessions")})`,
    { retryAfterSeconds: 1 },
  );
}

export function rateReached(policy: EffectivePolicy, waitMs: number): SandpoolError {
  return new SandpoolError(
    "quota.session_rate",
    `the workspace may create ${policy.sessionsPerMinute} sessions a minute (${raisedBy("sessionsPerMinute")})`,
    { retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) },
  );
}
