/**
 * A workspace's policy as operators read it (`GET /workspaces/{ws}/policy`): its row, the
 * values in force, and where each value comes from.
 */
import type { z } from "zod";
import type { AdminOperation } from "../operations/admin-operations.js";
import type { policySourceSchema } from "../operations/admin-schemas/policy-schemas.js";
import type { ResultOf } from "../operations/typed-handlers.js";
import { type EffectivePolicy, effectivePolicy } from "../policy/effective-policy.js";
import type { PolicyAdmin } from "../policy/policy-admin.js";
import type { DeploymentPolicy } from "../policy-schema/deployment-policy.js";
import type { WorkspacePolicyRow } from "../store/sql/policy-row.js";

export type PolicySource = z.output<typeof policySourceSchema>;

/** The answer as its operation declares it (policyViewSchema), a row's Date written as its ISO string. */
export type PolicyView = ResultOf<AdminOperation<"admin.policy.get">>;

export async function policyView(
  deployment: DeploymentPolicy,
  policyAdmin: PolicyAdmin,
  workspace: string,
): Promise<PolicyView> {
  const { effective, row } = await policyAdmin.explain(workspace);
  const deploymentOnly = effectivePolicy(workspace, deployment, undefined);
  const sources: Record<string, PolicySource> = {};
  for (const field of Object.keys(effective) as (keyof EffectivePolicy)[]) {
    if (field === "workspace" || field === "configured") continue;
    sources[field] = sourceOf(field, effective, deploymentOnly, row);
  }
  return {
    workspace,
    configured: effective.configured,
    row: row ?? null,
    effective: { ...effective, defaultImage: effective.defaultImage ?? null },
    sources,
  };
}

/**
 * "workspace" when the row decides the value in force: it differs from what the deployment
 * alone gives (a derived default clamped by the row's ceiling, too), or the row sets this
 * very value; else "deployment".
 */
function sourceOf(
  field: keyof EffectivePolicy,
  effective: EffectivePolicy,
  deploymentOnly: EffectivePolicy,
  row: WorkspacePolicyRow | undefined,
): PolicySource {
  if (row === undefined) return "deployment";
  if (!sameValue(effective[field], deploymentOnly[field])) return "workspace";
  if (!(field in row)) return "deployment";
  const rowValue = row[field as keyof WorkspacePolicyRow];
  return rowValue != null && sameValue(rowValue, effective[field]) ? "workspace" : "deployment";
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((item, i) => item === b[i]);
  return a === b;
}
