/**
 * Maps between workspace_policies columns (snake_case) and WorkspacePolicyRow (camelCase),
 * by the table of fields (src/policy-schema/policy-fields.ts): each field names its column.
 */
import type { Insertable, Selectable } from "kysely";
import { isToolKind } from "../../contract/schemas.js";
import { type PolicyFieldKind, policyFieldNames, policyFields } from "../../policy-schema/policy-fields.js";
import type { WorkspacePoliciesTable } from "./database-types.js";
import type { EditablePolicyFields, PolicySnapshot, WorkspacePolicyRow } from "./policy-row.js";

type PolicyColumns = Selectable<WorkspacePoliciesTable>;
type EditableColumns = Omit<Insertable<WorkspacePoliciesTable>, "workspace_id" | "version" | "updated_by">;

/** A column's value as the row holds it, where the drivers hand back something else. */
const fromColumn: Partial<Record<PolicyFieldKind, (value: unknown) => unknown>> = {
  // bigint arrives as a string from pg and as a number from PGlite.
  bytes: (value) => (value === null ? null : Number(value)),
  // A tool kind that a later contract dropped cannot be allowed any more: leaving it out
  // narrows the list, which fails closed.
  tools: (value) => (value as string[] | null)?.filter(isToolKind) ?? null,
};

/** Only the fields present in `fields`: an absent field keeps its stored value. */
export function toColumns(fields: Partial<EditablePolicyFields>): EditableColumns {
  const columns: Record<string, unknown> = {};
  for (const field of policyFieldNames) {
    const value = fields[field];
    if (value !== undefined) columns[policyFields[field].column] = value;
  }
  return columns as EditableColumns;
}

export function toRow(columns: PolicyColumns): WorkspacePolicyRow {
  const fields: Record<string, unknown> = {};
  for (const field of policyFieldNames) {
    const { column, kind } = policyFields[field];
    const value = columns[column];
    const convert = fromColumn[kind];
    fields[field] = convert ? convert(value) : value;
  }
  return {
    workspaceId: columns.workspace_id,
    ...(fields as EditablePolicyFields),
    version: columns.version,
    updatedAt: columns.updated_at,
    updatedBy: columns.updated_by,
  };
}

export function toSnapshot(row: WorkspacePolicyRow): PolicySnapshot {
  const { workspaceId: _id, updatedAt: _at, updatedBy: _by, ...snapshot } = row;
  return snapshot;
}
