/**
 * Pipeline step "policy": a contract call on a session is gated by its workspace's policy
 * (from the replica's cache): refused when the workspace is disabled (403
 * `policy.workspace_disabled`) or by the operation's own rules (403 `policy.tool_not_allowed`,
 * 413 `file.too_large`; src/session/session-plans.ts). CreateSession's policy (images, pools)
 * is its admission's, in SessionLifecycle.create. Admin and service operations have no policy
 * beyond the mounted step.
 */
import type { Principal } from "../../auth/principal.js";
import type { CallArgs } from "../../operations/handler.js";
import type { EffectivePolicy } from "../../policy/effective-policy.js";
import type { SessionCalls } from "../../session/session-calls.js";
import type { SessionPlan } from "../../session/session-plans.js";

export function policyGate(
  sessions: SessionCalls,
  plan: SessionPlan,
  principal: Principal,
  args: CallArgs,
): Promise<EffectivePolicy | undefined> {
  return sessions.gate(plan, principal.workspace, args);
}
