/**
 * The operations on an open session, explained in the order the pipeline answers them
 * (src/pipeline/pipeline.ts): the session is resolved first (an unknown, ended, expired or
 * other workspace's session is the same 404, before any other refusal), then the call's own
 * arguments, then policy (the workspace enabled, the tool, the size), then the day's budget
 * (Execute only). The lease is read, never touched: an
 * expired one is reported as the 404 it would answer, not ended.
 */
import { SandpoolError } from "../contract/error-codes.js";
import { parseExecRequest } from "../contract/parse-exec-request.js";
import type { OperationSpec } from "../operations/operation.js";
import { fileSizeAllowed, toolAllowed, workspaceEnabled } from "../policy/decide-access.js";
import { execTimeout, grantedTimeoutSeconds } from "../policy/decide-limits.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import { leaseDeadline } from "../store/coordination/records.js";
import type { ExplainServices } from "./explain-services.js";
import { clampStep, quotaStep, verdictStep } from "./explain-steps.js";
import type { Trace } from "./explain-trace.js";

export async function explainSessionCall(
  services: ExplainServices,
  operation: OperationSpec,
  policy: EffectivePolicy,
  args: Record<string, unknown>,
  trace: Trace,
): Promise<Record<string, unknown>> {
  const sessionId = args.session_id as string;
  const lease = await services.sessions.find(sessionId, policy.workspace);
  const live = lease !== undefined && leaseDeadline(lease) > Date.now();
  if (operation.id === "sessions.delete") {
    trace.pass("resolve", {
      rule: "session.live",
      detail: live
        ? `session '${sessionId}' is live: it would be ended`
        : "no live session with this id: DestroySession answers 204 all the same",
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
  if (operation.id === "sessions.get") {
    trace.skip(
      "policy",
      "workspace.enabled",
      "GetSession reads the handle: a disabled workspace may still read it",
    );
    return {};
  }
  if (operation.id === "sessions.exec") return explainExec(services, policy, args, trace);
  verdictStep(trace, workspaceEnabled(policy));
  if (operation.id === "files.put") {
    const declared = typeof args.content_length === "number" ? args.content_length : undefined;
    verdictStep(trace, fileSizeAllowed(policy, declared));
  }
  trace.skip("admit", "quota.exec_budget", "file calls reserve no execution time");
  return {};
}

async function explainExec(
  services: ExplainServices,
  policy: EffectivePolicy,
  args: Record<string, unknown>,
  trace: Trace,
): Promise<Record<string, unknown>> {
  const { session_id: _, ...body } = args;
  let request: ReturnType<typeof parseExecRequest> | undefined;
  try {
    request = parseExecRequest(body);
    trace.pass("args", { rule: "args.schema", detail: `a valid Execute body (${request.tool})` });
  } catch (error) {
    if (!(error instanceof SandpoolError)) throw error;
    trace.deny("args", error.code, { rule: "args.schema", detail: error.message });
  }
  verdictStep(trace, workspaceEnabled(policy));
  if (request) verdictStep(trace, toolAllowed(policy, request.tool));
  else trace.skip("policy", "tool.allowed", "no valid tool to check");
  const timeout = execTimeout(policy, request?.timeout_seconds);
  clampStep(trace, timeout);
  const { check, grantedMs } = await services.admission.previewExec(policy, timeout.value * 1000);
  quotaStep(trace, check);
  return { timeoutSeconds: grantedMs > 0 ? grantedTimeoutSeconds(timeout.value, grantedMs) : null };
}
