/**
 * A workspace's policy row as the rest of sandpool sees it (camelCase), and the shape
 * check for writes. Only shape: whether a value fits under the deployment's ceilings is the
 * policy module's call. Field names match src/policy's WorkspacePolicyFields, so a row can
 * be handed to it as is.
 */
import { z } from "zod";
import { type ToolKind, toolKinds } from "../../contract/schemas.js";

const INT4_MAX = 2_147_483_647;
// Null clears a narrowing (the deployment value applies again); undefined leaves it as is.
const positiveInt = z.number().int().min(1).max(INT4_MAX).nullable();
const name = z.string().min(1).max(512);

export const editablePolicyFieldsSchema = z.strictObject({
  enabled: z.boolean(),
  allowedImages: z.array(name).nullable(),
  defaultImage: name.nullable(),
  allowedTools: z.array(z.enum(toolKinds)).nullable(),
  execTimeoutCeilingSeconds: positiveInt,
  idleTimeoutCeilingSeconds: positiveInt,
  maxLifetimeCeilingSeconds: positiveInt,
  maxConcurrentSessions: positiveInt,
  sessionsPerMinute: positiveInt,
  execSecondsPerDay: positiveInt,
  maxFileBytes: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).nullable(),
  resourceClass: name.nullable(),
  egressAllowed: z.boolean().nullable(),
  egressAllowCidrs: z.array(z.string().min(1).max(64)).max(256).nullable(),
  egressAllowHosts: z.array(z.string().min(1).max(255)).max(256).nullable(),
});

export type EditablePolicyFields = z.output<typeof editablePolicyFieldsSchema>;

export interface WorkspacePolicyRow extends EditablePolicyFields {
  workspaceId: string;
  allowedTools: ToolKind[] | null;
  /** 1 on creation, +1 on every edit. */
  version: number;
  updatedAt: Date;
  updatedBy: string;
}

/** What an audit row records of a policy before and after an edit. */
export type PolicySnapshot = EditablePolicyFields & { version: number };

export interface PolicyAuditRow {
  id: number;
  workspaceId: string;
  actor: string;
  at: Date;
  /** Null when the edit created the row. */
  before: PolicySnapshot | null;
  /** Null when the edit deleted the row. */
  after: PolicySnapshot | null;
}
