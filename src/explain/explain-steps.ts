/** The trace steps of the decisions explain reports: the body, a policy verdict, a clamp, a quota check. */

import type { QuotaCheck } from "../admission/admission-preview.js";
import { SandpoolError } from "../contract/error-codes.js";
import type { OperationSpec } from "../operations/operation.js";
import { parseBody } from "../operations/parse-body.js";
import type { Clamp } from "../policy/decide-limits.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { PolicyVerdict } from "../policy/verdict.js";
import type { Trace } from "./explain-trace.js";

export function mountedStep(trace: Trace, operation: OperationSpec, workspace: string): void {
  trace.pass("mounted", {
    rule: "audience.workspace",
    detail: `${operation.id} (${operation.method} ${operation.path}) is mounted for workspace tokens: a token of '${workspace}' reaches it`,
  });
}

/**
 * The args step of an operation that takes a JSON body, checked as the pipeline checks it:
 * the body admitted, or undefined when it is refused.
 */
export function argsStep(trace: Trace, operation: OperationSpec, body: unknown): unknown {
  try {
    const admitted = parseBody(operation, body);
    const tool = (admitted as { tool?: unknown }).tool;
    trace.pass("args", {
      rule: "args.schema",
      detail: `a valid ${operation.label} body${typeof tool === "string" ? ` (${tool})` : ""}`,
    });
    return admitted;
  } catch (error) {
    if (!(error instanceof SandpoolError)) throw error;
    trace.deny("args", error.code, { rule: "args.schema", detail: error.message });
    return undefined;
  }
}

export function verdictStep(trace: Trace, verdict: PolicyVerdict): void {
  const fields = {
    rule: verdict.rule,
    field: verdict.field,
    value: verdict.value ?? null,
    ...(verdict.asked === undefined ? {} : { detail: `asked: ${String(verdict.asked)}` }),
  };
  if (verdict.allowed || !verdict.refusal) trace.pass("policy", fields);
  else trace.deny("policy", verdict.refusal.code, { ...fields, detail: verdict.refusal.message });
}

export function clampStep(trace: Trace, clamp: Clamp, unit = "s"): void {
  const detail =
    clamp.asked === null
      ? `none asked: the default, ${clamp.value}${unit}`
      : clamp.clamped
        ? `asked ${clamp.asked}${unit}, clamped to the ceiling`
        : `asked ${clamp.asked}${unit}, under the ceiling`;
  trace.pass("policy", {
    rule: clamp.rule,
    field: clamp.field,
    value: clamp.value,
    limit: clamp.limit,
    detail,
  });
}

export function quotaStep(trace: Trace, check: QuotaCheck): void {
  const fields = {
    rule: check.rule,
    field: check.field,
    value: check.used,
    limit: check.limit,
    detail: check.detail,
  };
  if (check.allowed || !check.refusal) trace.pass("admit", fields);
  else trace.deny("admit", check.refusal.code, fields);
}

/** The workspace's limits in force, as the admin API shows them (`defaultImage` null when none is left). */
export function limitsInForce(policy: EffectivePolicy): Record<string, unknown> {
  const { workspace: _, defaultImage, ...limits } = policy;
  return { ...limits, defaultImage: defaultImage ?? null };
}
