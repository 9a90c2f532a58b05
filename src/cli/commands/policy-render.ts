/**
 * How `sandpool policy` shows policy rows, effective policy, audit entries and usage to people
 * (the --json output is the admin API's answer as it is).
 */
import {
  effectiveFieldNames,
  type PolicyFieldName,
  policyFieldNames,
  policyFields,
} from "../../policy-schema/policy-fields.js";
import type { AdminBody } from "../admin/admin-client.js";
import { formatValue, table } from "../admin/admin-render.js";

export type PolicyField = PolicyFieldName;

/** `--flag` name -> the admin API's field, for `policy set` and `--clear` (from the table of fields). */
export const fieldOfFlag: Readonly<Record<string, PolicyField>> = Object.fromEntries(
  policyFieldNames.map((field) => [policyFields[field].flag, field]),
);

/** The order `policy get` shows the effective policy in: each field, then a default its ceiling clamps. */
export const effectiveFields: readonly string[] = effectiveFieldNames;

// ---------------------------------------------------------------------------------------------
// What the admin API answers: the types generated from its OpenAPI document, not copies of them

type PolicyAnswer = AdminBody<"get", "/admin/v1/workspaces/{ws}/policy">;
/** A policy as `policy get` shows it: the answer, its values read field by field off the table of fields. */
export type ShownPolicy = Omit<PolicyAnswer, "effective"> & { effective: Readonly<Record<string, unknown>> };
export type PolicyRow = AdminBody<"get", "/admin/v1/workspaces">["workspaces"][number];
export type AuditEntry = AdminBody<"get", "/admin/v1/workspaces/{ws}/audit">["entries"][number];
export type UsageRow = AdminBody<"get", "/admin/v1/workspaces/{ws}/usage">["usage"][number];

// ---------------------------------------------------------------------------------------------
// Rendering

/** The fields a row narrows (set, not null), as `field=value`. */
export function narrowings(row: Record<string, unknown>): string[] {
  return policyFieldNames
    .filter(
      (field) =>
        row[field] !== null && row[field] !== undefined && !(field === "enabled" && row[field] === true),
    )
    .map((field) => `${field}=${formatValue(row[field])}`);
}

/**
 * A policy field's value in a table cell, the same words wherever a field is shown (`policy
 * get`, `explain`): an empty host list restricts nothing, so it reads "(any host)", not "(none)".
 */
export function formatPolicyValue(field: string | undefined, value: unknown): string {
  if (field === "egressAllowHosts" && Array.isArray(value) && value.length === 0) return "(any host)";
  return formatValue(value);
}

export function renderPolicy(view: ShownPolicy): string {
  const heading = view.row
    ? `workspace ${view.workspace}: policy row version ${view.row.version}, updated ${view.row.updatedAt} by ${view.row.updatedBy}`
    : `workspace ${view.workspace}: no policy row; the deployment defaults apply`;
  const rows = effectiveFields.map((field) => [
    field,
    formatPolicyValue(field, view.effective[field]),
    view.sources[field] === "workspace" ? "workspace row" : "deployment",
  ]);
  return `${heading}\n\n${table(["FIELD", "VALUE IN FORCE", "SOURCE"], rows)}`;
}

/** A value in an audit line: a cleared narrowing reads as "unset". */
function auditValue(value: unknown): string {
  return value === null || value === undefined ? "unset" : formatValue(value);
}

/** A policy row before and after an edit or an apply, read field by field. */
export interface PolicyChange {
  before: Readonly<Record<string, unknown>> | null;
  after: Readonly<Record<string, unknown>> | null;
}

export function describeChange(entry: PolicyChange): string {
  if (entry.before === null) {
    const set = entry.after ? narrowings(entry.after) : [];
    return `created${set.length > 0 ? `: ${set.join(", ")}` : ""}`;
  }
  if (entry.after === null) return "deleted (deployment defaults apply)";
  const changes = policyFieldNames
    .filter(
      (field) =>
        JSON.stringify(entry.before?.[field] ?? null) !== JSON.stringify(entry.after?.[field] ?? null),
    )
    .map((field) => `${field} ${auditValue(entry.before?.[field])} -> ${auditValue(entry.after?.[field])}`);
  return changes.length > 0 ? `updated: ${changes.join(", ")}` : "updated: no change";
}

export function formatQuantity(row: UsageRow): string {
  if (row.quantity === 0) return "-";
  if (row.kind === "exec" || row.kind === "session_ended" || row.kind === "sandbox_cpu")
    return `${(row.quantity / 1000).toFixed(1)} s`;
  if (row.kind === "file_in" || row.kind === "file_out" || row.kind === "sandbox_memory_peak")
    return `${row.quantity} bytes`;
  return String(row.quantity);
}
