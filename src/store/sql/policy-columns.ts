/** Maps between workspace_policies columns (snake_case) and WorkspacePolicyRow (camelCase). */
import type { Insertable, Selectable } from "kysely";
import { isToolKind } from "../../contract/schemas.js";
import type { WorkspacePoliciesTable } from "./database-types.js";
import type { EditablePolicyFields, PolicySnapshot, WorkspacePolicyRow } from "./policy-row.js";

type PolicyColumns = Selectable<WorkspacePoliciesTable>;
type EditableColumns = Omit<Insertable<WorkspacePoliciesTable>, "workspace_id" | "version" | "updated_by">;

const columnOf = {
  enabled: "enabled",
  allowedImages: "allowed_images",
  defaultImage: "default_image",
  allowedTools: "allowed_tools",
  execTimeoutCeilingSeconds: "exec_timeout_ceiling_s",
  idleTimeoutCeilingSeconds: "idle_timeout_ceiling_s",
  maxLifetimeCeilingSeconds: "max_lifetime_ceiling_s",
  maxConcurrentSessions: "max_concurrent_sessions",
  sessionsPerMinute: "sessions_per_minute",
  execSecondsPerDay: "exec_seconds_per_day",
  maxFileBytes: "max_file_bytes",
  resourceClass: "resource_class",
  egressAllowed: "egress_allowed",
  egressAllowCidrs: "egress_allow_cidrs",
  egressAllowHosts: "egress_allow_hosts",
} as const satisfies Record<keyof EditablePolicyFields, keyof EditableColumns>;

/** Only the fields present in `fields`: an absent field keeps its stored value. */
export function toColumns(fields: Partial<EditablePolicyFields>): EditableColumns {
  const columns: Record<string, unknown> = {};
  for (const [field, column] of Object.entries(columnOf)) {
    const value = fields[field as keyof EditablePolicyFields];
    if (value !== undefined) columns[column] = value;
  }
  return columns as EditableColumns;
}

export function toRow(columns: PolicyColumns): WorkspacePolicyRow {
  return {
    workspaceId: columns.workspace_id,
    enabled: columns.enabled,
    allowedImages: columns.allowed_images,
    defaultImage: columns.default_image,
    // A tool kind that a later contract dropped cannot be allowed any more: leaving it out
    // narrows the list, which fails closed.
    allowedTools: columns.allowed_tools?.filter(isToolKind) ?? null,
    execTimeoutCeilingSeconds: columns.exec_timeout_ceiling_s,
    idleTimeoutCeilingSeconds: columns.idle_timeout_ceiling_s,
    maxLifetimeCeilingSeconds: columns.max_lifetime_ceiling_s,
    maxConcurrentSessions: columns.max_concurrent_sessions,
    sessionsPerMinute: columns.sessions_per_minute,
    execSecondsPerDay: columns.exec_seconds_per_day,
    maxFileBytes: columns.max_file_bytes === null ? null : Number(columns.max_file_bytes),
    resourceClass: columns.resource_class,
    egressAllowed: columns.egress_allowed,
    egressAllowCidrs: columns.egress_allow_cidrs,
    egressAllowHosts: columns.egress_allow_hosts,
    version: columns.version,
    updatedAt: columns.updated_at,
    updatedBy: columns.updated_by,
  };
}

export function toSnapshot(row: WorkspacePolicyRow): PolicySnapshot {
  const { workspaceId: _id, updatedAt: _at, updatedBy: _by, ...snapshot } = row;
  return snapshot;
}
