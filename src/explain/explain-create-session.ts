/**
 * sessions.create, explained in the order the gateway runs it: the body (422), the policy
 * gate of its session plan (the workspace enabled, then the plan's rules: the image, the
 * default when none is asked), then what SessionLifecycle.create decides (a pool serving the
 * image, the timeouts clamped, admission: the day's budget, a slot, the rate, and the pool's
 * capacity: warm lease, cold start, or 503), all read and none taken.
 */
import { SandpoolError } from "../contract/error-codes.js";
import type { CreateSessionRequest } from "../contract/schemas.js";
import { judgeNarrowing, parseSessionEgress } from "../egress/session-egress.js";
import type { OperationSpec } from "../operations/operation.js";
import { imageAllowed, workspaceEnabled } from "../policy/decide-access.js";
import { sessionTimeouts } from "../policy/decide-limits.js";
import { poolServing } from "../policy/decide-pool.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { ExplainDeps } from "./explain-deps.js";
import { argsStep, clampStep, quotaStep, verdictStep } from "./explain-steps.js";
import type { Trace } from "./explain-trace.js";

export async function explainCreateSession(
  services: ExplainDeps,
  operation: OperationSpec,
  policy: EffectivePolicy,
  args: Record<string, unknown>,
  trace: Trace,
): Promise<Record<string, unknown>> {
  // A malformed body is refused before anything else; the later steps show what its valid parts would meet.
  const request = (argsStep(trace, operation, args) ?? {}) as CreateSessionRequest;

  verdictStep(trace, workspaceEnabled(policy));
  for (const rule of operation.session?.rules ?? [])
    verdictStep(trace, rule.decide(policy, { body: request }));
  await narrowingStep(services, policy, args, trace);
  // The image the gate allowed, as the lifecycle takes it to choose the pool.
  const image = imageAllowed(policy, request.image);
  const chosen = image.allowed ? poolServing(services.pools.list(), image.image!, policy) : undefined;
  const pool = chosen?.pool;
  if (!chosen) trace.skip("policy", "image.pool", "no pool is looked for an image that is not allowed");
  else if (!pool)
    trace.deny("policy", chosen.refusal!.code, {
      rule: chosen.rule,
      field: chosen.field,
      value: chosen.value,
      detail: chosen.refusal!.message,
    });
  else
    trace.pass("policy", {
      rule: "image.pool",
      field: "isolation",
      value: policy.isolation,
      detail: `pool '${pool.name}' serves '${image.image}' (${pool.isolation ?? "container"} isolation${pool.egress ? ", with egress" : ""})`,
    });
  const timeouts = sessionTimeouts(policy, request);
  clampStep(trace, timeouts.idle);
  clampStep(trace, timeouts.lifetime);

  const admission = await services.admission.previewSession(policy);
  for (const check of admission.checks) quotaStep(trace, check);
  if (!pool) {
    trace.skip("admit", "pool.capacity", "no pool to lease from");
  } else {
    const capacity = await services.pools.capacity(pool);
    const fields = {
      rule: "pool.capacity",
      value: capacity.members,
      limit: capacity.maxTotal,
      detail: capacity.detail,
    };
    if (capacity.outcome === "exhausted") trace.deny("admit", "capacity.exhausted", fields);
    else trace.pass("admit", fields);
  }
  return {
    image: image.image ?? null,
    pool: pool?.name ?? null,
    idleTimeoutSeconds: timeouts.idle.value,
    maxLifetimeSeconds: timeouts.lifetime.value,
  };
}

/**
 * CreateSession's `sandpool` member (per-session egress), judged as its handler judges it
 * (src/egress/session-egress.ts): a widening is the call's 403, a bad shape its 422.
 */
async function narrowingStep(
  services: ExplainDeps,
  policy: EffectivePolicy,
  args: Record<string, unknown>,
  trace: Trace,
): Promise<void> {
  if (args.sandpool === undefined) return;
  let asked: ReturnType<typeof parseSessionEgress>;
  try {
    asked = parseSessionEgress(args);
  } catch (error) {
    if (!(error instanceof SandpoolError)) throw error;
    trace.deny("args", error.code, { rule: "args.sandpool", detail: error.message });
    return;
  }
  const names = asked?.secrets?.length
    ? ((await services.secretBindings?.(policy.workspace)) ?? []).map((secret) => secret.name)
    : [];
  const verdict = judgeNarrowing(asked, policy, names);
  if (verdict.allowed)
    trace.pass("policy", {
      rule: "egress.narrowing",
      field: "egressAllowHosts",
      value: policy.egressAllowHosts,
      detail: "the session's sandpool member narrows its workspace's egress",
    });
  else
    trace.deny("policy", verdict.code, {
      rule: "egress.narrowing",
      field: verdict.code === "policy.secret_not_allowed" ? verdict.field : "egressAllowHosts",
      value: verdict.code === "policy.secret_not_allowed" ? null : policy.egressAllowHosts,
      detail: verdict.message,
    });
}
