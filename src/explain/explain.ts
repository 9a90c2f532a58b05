/**
 * Explain (`POST /admin/v1/explain`, `sandpool explain`): the decision trace of a would-be
 * contract call, made of the same decisions the gateway's real checks use (src/policy/ for
 * policy, the admission and capacity previews for quotas and the pool), without running it:
 * it starts, leases and touches no sandbox, and takes no slot, rate or budget. The policy
 * comes from the same cache a real call reads.
 */
import { explainCreateSession } from "./explain-create-session.js";
import type { ExplainRequest } from "./explain-request.js";
import type { ExplainServices } from "./explain-services.js";
import { explainSessionCall } from "./explain-session-call.js";
import { limitsInForce, mountedStep } from "./explain-steps.js";
import { type ExplainAnswer, Trace } from "./explain-trace.js";

export type { ExplainServices } from "./explain-services.js";

export async function explain(services: ExplainServices, request: ExplainRequest): Promise<ExplainAnswer> {
  const { workspace, operation, args } = request;
  const trace = new Trace();
  mountedStep(trace, operation, workspace);
  const policy = await services.policies.forWorkspace(workspace);
  const call =
    operation.id === "sessions.create"
      ? await explainCreateSession(services, policy, args, trace)
      : await explainSessionCall(services, operation, policy, args, trace);
  const code = trace.code();
  return {
    workspace,
    operation: operation.id,
    decision: code === null ? "allow" : "deny",
    code,
    steps: trace.steps,
    effective: { ...limitsInForce(policy), ...call },
  };
}
