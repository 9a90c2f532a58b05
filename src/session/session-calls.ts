/**
 * The session layer's part of the pipeline for a contract call, as its operation's session
 * plan says (src/operations/session-plan.ts, declared with the operation): the policy gate
 * (from the replica's policy cache, no store round trip), the 404-first order of refusals,
 * and the admission of the call on its session (`SessionLifecycle.beginCall`: resolve,
 * budget and busy in one round trip at most).
 *
 * The session's 404 comes before anything else: on the hot path that costs nothing, since
 * the admission resolves the session in its one round trip; but a refusal found before it
 * (a malformed body, a tool not allowed, a disabled workspace) resolves the session first,
 * so the caller gets the 404 when there is no session (`refuseInOrder`).
 */
import type { Principal } from "../auth/principal.js";
import type { CallArgs } from "../operations/handler.js";
import type { ResolvedSession } from "../operations/resolved-session.js";
import type { SessionPlan, SessionPlanLimits } from "../operations/session-plan.js";
import { workspaceEnabled } from "../policy/decide-access.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { PolicyService } from "../policy/policy-service.js";
import { enforce } from "../policy/verdict.js";
import type { LeaseKey } from "../store/coordination/records.js";
import type { CallOptions, SessionLifecycle } from "./session-lifecycle.js";

export interface SessionCallsDeps {
  sessions: Pick<SessionLifecycle, "resolve" | "beginCall">;
  policies: Pick<PolicyService, "forWorkspace">;
  limits: SessionPlanLimits;
}

export class SessionCalls {
  constructor(private readonly deps: SessionCallsDeps) {}

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
    for (const rule of plan.rules ?? []) enforce(rule.decide(policy, args));
    return policy;
  }

  /**
   * Throws `refusal`, or the session's 404 when the call names a session there is none of:
   * that comes first, so a refusal found before the call's begin says nothing a 404 would not.
   */
  async refuseInOrder(key: LeaseKey | undefined, refusal: unknown): Promise<never> {
    if (key !== undefined) await this.deps.sessions.resolve(key);
    throw refusal;
  }

  /** The admit step: the call begun on its session (or its lease read), as the plan says. */
  async admit(
    plan: SessionPlan,
    key: LeaseKey,
    policy: EffectivePolicy | undefined,
    args: CallArgs,
  ): Promise<ResolvedSession> {
    if (plan.admits === "resolve") {
      return { key, policy, call: undefined, lease: await this.deps.sessions.resolve(key) };
    }
    if (plan.admits === "none") return { key, policy, call: undefined, lease: undefined };
    const call = await this.deps.sessions.beginCall(key, this.callOptions(plan, policy, args));
    return { key, policy, call, lease: call.lease };
  }

  /** A call's options come from the policy in force: a plan that begins one is gated. */
  private callOptions(plan: SessionPlan, policy: EffectivePolicy | undefined, args: CallArgs): CallOptions {
    if (!plan.busyMs || !policy) throw new Error("a plan that begins a call must be gated and say how long");
    const requestedMs = plan.reserves ? plan.reserves(policy, args).value * 1000 : undefined;
    const deadlineMs = plan.busyMs(this.deps.limits, requestedMs);
    return requestedMs === undefined ? { deadlineMs } : { deadlineMs, budget: { policy, requestedMs } };
  }
}
