/**
 * Admission read, not taken (explain, src/explain/): what `Admission.admitSession` and a
 * call's budget reservation would answer now, from the coordination store's read-only views.
 * The checks run in the order the store's one-step admission runs them (the day's budget,
 * then a slot, then the rate) and refuse with the very errors the real call gets. A preview
 * is a snapshot: a real call a moment later may find another replica took the last slot.
 */
import type { SandpoolError } from "../contract/error-codes.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { AdmissionStore } from "../store/coordination/admission-store.js";
import {
  budgetDay,
  budgetSpent,
  type ExecBudgetRequest,
  MINUTE_MS,
  rateReached,
  slotsTaken,
} from "./quota-refusals.js";

export interface QuotaCheck {
  rule: "quota.exec_budget" | "quota.concurrent_sessions" | "quota.session_rate";
  /** The policy field that sets the limit. */
  field: "execSecondsPerDay" | "maxConcurrentSessions" | "sessionsPerMinute";
  allowed: boolean;
  /** What is used now, in the field's unit (seconds of the day, slots held, sessions in the last minute). */
  used: number;
  limit: number;
  detail: string;
  /** The refusal a real call would get. */
  refusal?: SandpoolError;
}

export interface SessionAdmissionPreview {
  checks: QuotaCheck[];
  /** The first refusal, as the real admission answers it; undefined when it would admit. */
  refusal?: SandpoolError;
}

export interface ExecAdmissionPreview {
  check: QuotaCheck;
  /** What the call would be granted of the day's budget: min(asked, what remains); 0 when refused. */
  grantedMs: number;
}

async function budgetCheck(
  store: AdmissionStore,
  policy: EffectivePolicy,
  now: number,
  requestedMs?: number,
): Promise<QuotaCheck & { remainingMs: number }> {
  const day = budgetDay(now);
  const usedMs = await store.readBudget(policy.workspace, day);
  const limitMs = policy.execSecondsPerDay * 1000;
  const remainingMs = Math.max(0, limitMs - usedMs);
  const allowed = remainingMs > 0;
  return {
    rule: "quota.exec_budget",
    field: "execSecondsPerDay",
    allowed,
    used: usedMs / 1000,
    limit: policy.execSecondsPerDay,
    remainingMs,
    detail:
      `${usedMs} of ${limitMs} ms used on ${day} (UTC), ${remainingMs} ms left` +
      (requestedMs === undefined || !allowed ? "" : `; the call asks ${requestedMs} ms`),
    ...(allowed ? {} : { refusal: budgetSpent(policy, now) }),
  };
}

export async function previewSession(
  store: AdmissionStore,
  policy: EffectivePolicy,
  now: number,
): Promise<SessionAdmissionPreview> {
  const [budget, inUse, window] = await Promise.all([
    budgetCheck(store, policy, now),
    store.countSlots(policy.workspace, now),
    store.countRate(policy.workspace, MINUTE_MS, now),
  ]);
  const slotsFree = inUse < policy.maxConcurrentSessions;
  const slots: QuotaCheck = {
    rule: "quota.concurrent_sessions",
    field: "maxConcurrentSessions",
    allowed: slotsFree,
    used: inUse,
    limit: policy.maxConcurrentSessions,
    detail: `${inUse} of ${policy.maxConcurrentSessions} concurrent-session slots held`,
    ...(slotsFree ? {} : { refusal: slotsTaken(policy) }),
  };
  const rateRoom = window.count < policy.sessionsPerMinute;
  // As the store answers a full window: until its oldest event leaves it.
  const waitMs = rateRoom || window.oldestAt === null ? 0 : Math.max(1, window.oldestAt + MINUTE_MS - now);
  const rate: QuotaCheck = {
    rule: "quota.session_rate",
    field: "sessionsPerMinute",
    allowed: rateRoom,
    used: window.count,
    limit: policy.sessionsPerMinute,
    detail:
      `${window.count} of ${policy.sessionsPerMinute} sessions created in the last minute` +
      (rateRoom ? "" : `; room again in ${waitMs} ms`),
    ...(rateRoom ? {} : { refusal: rateReached(policy, waitMs) }),
  };
  const { remainingMs: _, ...budgetOnly } = budget;
  const checks = [budgetOnly, slots, rate];
  const refusal = checks.find((check) => !check.allowed)?.refusal;
  return refusal ? { checks, refusal } : { checks };
}

export async function previewExec(
  store: AdmissionStore,
  policy: EffectivePolicy,
  request: ExecBudgetRequest,
  now: number,
): Promise<ExecAdmissionPreview> {
  const { remainingMs, ...check } = await budgetCheck(store, policy, now, request.requestedMs);
  return { check, grantedMs: Math.min(request.requestedMs, remainingMs) };
}
