/**
 * Explain (`POST /admin/v1/explain`, `sandpool explain`): the decision trace of a would-be
 * contract call, made of the same decisions the gateway's real checks use (src/policy/ for
 * policy, the admission and capacity previews for quotas and the pool), without running it:
 * it starts, leases and touches no sandbox, and takes no slot, rate or budget. The policy
 * comes from the same cache a real call reads. Given a bearer token, it first says whether the
 * gateway would accept it and for which workspace (src/explain/explain-token.ts).
 */
import { explainCreateSession } from "./explain-create-session.js";
import type { ExplainDeps } from "./explain-deps.js";
import { explainEgress } from "./explain-egress.js";
import { type ExplainRequest, onSession } from "./explain-request.js";
import { explainSessionCall } from "./explain-session-call.js";
import { limitsInForce, mountedStep } from "./explain-steps.js";
import { tokenStep } from "./explain-token.js";
import { type ExplainAnswer, Trace } from "./explain-trace.js";

export type { ExplainDeps } from "./explain-deps.js";

export async function explain(services: ExplainDeps, request: ExplainRequest): Promise<ExplainAnswer> {
  const { operation, args } = request;
  const trace = new Trace();
  // With a token, the rest is evaluated for the workspace its calls would go to.
  const checked =
    request.token === undefined
      ? undefined
      : await tokenStep(services.authenticator, trace, request.token, request.workspace);
  const workspace = checked?.workspace ?? request.workspace;
  mountedStep(trace, operation, workspace);
  const policy = await services.policies.forWorkspace(workspace);
  // A call on a session walks its plan from the session's 404; the one that leases a session, its lease.
  const call = onSession(operation)
    ? await explainSessionCall(services, operation, policy, args, trace)
    : await explainCreateSession(services, operation, policy, args, trace);
  const code = trace.code();
  // A destination's verdict is a trace of its own: a refused destination is not a refused call.
  const egress = request.egress && (await explainEgress(services, operation, policy, args, request.egress));
  return {
    workspace,
    operation: operation.id,
    decision: code === null ? "allow" : "deny",
    code,
    steps: trace.steps,
    effective: { ...limitsInForce(policy), ...call },
    ...(checked ? { token: checked.verdict } : {}),
    ...(egress ? { egress } : {}),
  };
}
