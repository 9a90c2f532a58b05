/**
 * The session layer's part of the pipeline for a contract call: the policy gate (from the
 * replica's policy cache, no store round trip), the 404-first order of refusals, and the
 * admission of the call on its session (`SessionLifecycle.beginCall`: resolve, budget and
 * busy in one round trip at most). The pipeline's resolve, policy and admit steps call these.
 */
import type { Principal } from "../auth/principal.js";
import type { CallArgs } from "../operations/handler.js";
import { workspaceEnabled } from "../policy/decide-access.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { PolicyService } from "../policy/policy-service.js";
import { enforce } from "../policy/verdict.js";
import type { LeaseKey } from "../store/coordination/records.js";
import type { AdmittedSession } from "./admitted-session.js";
import type { SessionLifecycle } from "./session-lifecycle.js";
import { type SessionPlan, type SessionPlanLimits, sessionPlans } from "./session-plans.js";

export interface SessionCallsDeps {
  sessions: Pick<SessionLifecycle, "resolve" | "beginCall">;
  policies: Pick<PolicyService, "forWorkspace">;
  limits: SessionPlanLimits;
}

export class SessionCalls {
  constructor(private readonly deps: SessionCallsDeps) {}

  /** The plan of a contract operation that names a session or leases one; undefined for any other. */
  plan(operationId: string): SessionPlan | undefined {
    return sessionPlans[operationId];
  }

  /** The session a call names: its `{id}` in the caller's workspace (never another's). */
  keyOf(principal: Principal, args: Pick<CallArgs, "params">): LeaseKey | undefined {
    const sessionId = args.params.id;
    return sessionId === undefined ? undefined : { workspace: principal.workspace, sessionId };
  }

  /** The policy step: the workspace's policy, refused when disabled or by the operation's rules. */
  async gate(plan: SessionPlan, workspace: string, args: CallArgs): Promise<EffectivePolicy | undefined> {
    if (!plan.gated) return undefined;
    const policy = await this.deps.policies.forWorkspace(workspace);
    enforce(workspaceEnabled(policy));
    plan.rules?.(policy, args);
    return policy;
  }

  /**
   * Throws `refusal`, or the session's 404 when there is no such session: that comes first,
   * so a refusal found before the call's begin says nothing a 404 would not.
   */
  async refuseInOrder(key: LeaseKey, refusal: unknown): Promise<never> {
    await this.deps.sessions.resolve(key);
    throw refusal;
  }

  /** The admit step: the call begun on its session (or its lease read), as the plan says. */
  async admit(
    plan: SessionPlan,
    key: LeaseKey,
    policy: EffectivePolicy | undefined,
    args: CallArgs,
  ): Promise<AdmittedSession> {
    if (plan.admits === "resolve") {
      return { key, policy, call: undefined, lease: await this.deps.sessions.resolve(key) };
    }
    if (plan.admits === "none") return { key, policy, call: undefined, lease: undefined };
    // A call's options come from the policy in force: a plan that begins one is gated.
    if (!plan.callOptions || !policy)
      throw new Error("a plan that begins a call must be gated and give its options");
    const call = await this.deps.sessions.beginCall(key, plan.callOptions(policy, args, this.deps.limits));
    return { key, policy, call, lease: call.lease };
  }
}
