/**
 * A workspace's policy row as the rest of sandpool sees it (camelCase), and the shape
 * check for writes, both derived from the table of fields (src/policy-schema/policy-fields.ts). Only
 * shape: whether a value fits under the deployment's ceilings is the policy module's call.
 * Field names match src/policy's WorkspacePolicyFields, so a row can be handed to it as is.
 */
import type { z } from "zod";
import type { ToolKind } from "../../contract/schemas.js";
import { policyRowSchema } from "../../policy-schema/policy-fields.js";

// Null clears a narrowing (the deployment value applies again); undefined leaves it as is.
export const editablePolicyFieldsSchema = policyRowSchema;

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
