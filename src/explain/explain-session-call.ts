/**
 * The operations on an open session, explained in the order the pipeline answers them
 * (src/pipeline/pipeline.ts), walking the operation's own session plan (declared with it,
 * src/operations/contract-operations.ts): the session is resolved first (an unknown, ended,
 * expired or other workspace's session is the same 404, before any other refusal), then the
 * call's own arguments, then policy (the workspace enabled, then the plan's rules), then the
 * day's budget for a call that reserves execution time. The lease is read, never touched: an
 * expired one is reported as the 404 it would answer, not ended.
 */
import type { OperationSpec } from "../operations/operation.js";
import type { RuleArgs, SessionPlan } from "../operations/session-plan.js";
import { workspaceEnabled } from "../policy/decide-access.js";
import { grantedTimeoutSeconds } from "../policy/decide-limits.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import { leaseDeadline } from "../store/coordination/records.js";
import type { ExplainDeps } from "./explain-deps.js";
import { argsStep, clampStep, quotaStep, verdictStep } from "./explain-steps.js";
import type { Trace } from "./explain-trace.js";

export async function explainSessionCall(
  services: ExplainDeps,
  operation: OperationSpec,
  policy: EffectivePolicy,
  args: Record<string, unknown>,
  trace: Trace,
): Promise<Record<string, unknown>> {
  const plan: SessionPlan = operation.session ?? { admits: "none", gated: false };
  // The call's body is its arguments but the session id, which the real call takes from its path.
  const { session_id: sessionId, ...body } = args as { session_id: string };
  const contentLength = args.content_length;
  const lease = await services.sessions.find(sessionId, policy.workspace);
  const live = lease !== undefined && leaseDeadline(lease) > Date.now();
  if (plan.admits === "none") {
    // Nothing is resolved: the handler takes any id (DestroySession answers 204 for all).
    trace.pass("resolve", {
      rule: "session.live",
      detail: live
        ? `session '${sessionId}' is live: it would be ended`
        : `no live session with this id: ${operation.label} answers ${operation.success} all the same`,
    });
    return {};
  }
  if (live)
    trace.pass("resolve", {
      rule: "session.live",
      detail: `session '${sessionId}' (image ${lease.image}, pool ${lease.pool})`,
    });
  else
    trace.deny("resolve", "session.not_found", {
      rule: "session.live",
      detail:
        "no live session with this id in the workspace (unknown, ended, expired or another workspace's: the same 404)",
    });
  const admitted = operation.parseBody || operation.body ? argsStep(trace, operation, body) : undefined;
  if (!plan.gated) {
    trace.skip("policy", "workspace.enabled", plan.ungated ?? `${operation.label} is not gated by policy`);
    return {};
  }
  const ruleArgs: RuleArgs = {
    body: admitted,
    stream: { contentLength: typeof contentLength === "number" ? contentLength : undefined },
  };
  verdictStep(trace, workspaceEnabled(policy));
  for (const rule of plan.rules ?? []) {
    if (rule.readsBody && admitted === undefined)
      trace.skip("policy", rule.readsBody.rule, rule.readsBody.skipped);
    else verdictStep(trace, rule.decide(policy, ruleArgs));
  }
  if (!plan.reserves) {
    trace.skip("admit", "quota.exec_budget", "file calls reserve no execution time");
    return {};
  }
  const timeout = plan.reserves(policy, ruleArgs);
  clampStep(trace, timeout);
  const { check, grantedMs } = await services.admission.previewExec(policy, timeout.value * 1000);
  quotaStep(trace, check);
  return { timeoutSeconds: grantedMs > 0 ? grantedTimeoutSeconds(timeout.value, grantedMs) : null };
}
