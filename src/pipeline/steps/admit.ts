/**
 * Pipeline step "admit": a contract call on a session begins as its plan says: resolved,
 * its execution time reserved against the day's budget (429 `quota.exec_budget`) and the
 * session marked busy, in one store round trip; or its lease read. The calls in flight per
 * workspace (429 `quota.calls_in_flight`) are admitted by the transport before the route
 * runs (src/http/middleware/calls-in-flight.ts); CreateSession's quota and capacity by its
 * handler's SessionLifecycle.create.
 */
import type { CallArgs } from "../../operations/handler.js";
import type { EffectivePolicy } from "../../policy/effective-policy.js";
import type { AdmittedSession } from "../../session/admitted-session.js";
import type { SessionCalls } from "../../session/session-calls.js";
import type { SessionPlan } from "../../session/session-plans.js";
import type { LeaseKey } from "../../store/coordination/records.js";

export function admitCall(
  sessions: SessionCalls,
  plan: SessionPlan,
  key: LeaseKey | undefined,
  policy: EffectivePolicy | undefined,
  args: CallArgs,
): Promise<AdmittedSession> | undefined {
  return key === undefined ? undefined : sessions.admit(plan, key, policy, args);
}
