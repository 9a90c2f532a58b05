/**
 * The shapes of the workspace-policy operations (`/workspaces`, `/workspaces/{ws}/policy`,
 * `/workspaces/{ws}/audit`). The edit's body is the schema PolicyAdmin validates with
 * (src/policy/workspace-policy-fields.ts), imported, not copied; dates are ISO 8601 strings.
 */
import { z } from "zod";
import { toolKinds } from "../../contract/schemas.js";
import { isolationLevels } from "../../policy-schema/isolation-levels.js";
import {
  effectiveFieldNames,
  type PolicyFieldKind,
  type PolicyFieldName,
  policyFields,
} from "../../policy-schema/policy-fields.js";
import { editablePolicyFieldsSchema } from "../../store/sql/policy-row.js";
import { wholeNumber } from "./admin-params.js";

export { workspacePolicyFieldsSchema as policyEditSchema } from "../../policy/workspace-policy-fields.js";

export const DEFAULT_AUDIT_LIMIT = 100;
export const MAX_AUDIT_LIMIT = 1_000;

const isoDate = z.string().meta({ description: "ISO 8601 date-time." });

/** A workspace's policy row: what it narrows, with its version and last editor. */
export const versionedPolicyRowSchema = editablePolicyFieldsSchema.extend({
  workspaceId: z.string(),
  version: z.number().int(),
  updatedAt: isoDate,
  updatedBy: z.string(),
});

/** What a field of each kind is in force: never null, the deployment's value applies (or, for a workspace's own, none). */
const inForce: Record<PolicyFieldKind, z.ZodType> = {
  switch: z.boolean(),
  flag: z.boolean(),
  count: z.number(),
  bytes: z.number(),
  name: z.string(),
  names: z.array(z.string()),
  tools: z.array(z.enum(toolKinds)),
  cidrs: z.array(z.string()),
  hosts: z.array(z.string()),
  isolation: z.enum(isolationLevels),
  // Fields a workspace alone sets: null in force when it sets none.
  limit: z.number().nullable(),
  idleSeconds: z.number().nullable(),
};

const isPolicyField = (field: string): field is PolicyFieldName => field in policyFields;

/**
 * The values in force for a workspace: the deployment's, narrowed by its row. One value per
 * field of the table (src/policy-schema/policy-fields.ts), and the defaults the ceilings clamp.
 */
export const effectivePolicySchema = z.object({
  workspace: z.string(),
  configured: z.boolean(),
  ...Object.fromEntries(
    effectiveFieldNames.map((field) => [
      field,
      isPolicyField(field) ? inForce[policyFields[field].kind] : z.number(),
    ]),
  ),
  // Null when the row narrows the images so far that none is left.
  defaultImage: z.string().nullable(),
});

export const policySourceSchema = z.enum(["deployment", "workspace"]);

/** GET and PUT `/workspaces/{ws}/policy`: the row, the values in force, and where each comes from. */
export const policyViewSchema = z.object({
  workspace: z.string(),
  configured: z.boolean(),
  row: versionedPolicyRowSchema.nullable(),
  effective: effectivePolicySchema,
  sources: z.record(z.string(), policySourceSchema),
});

export const workspacesResultSchema = z.object({ workspaces: z.array(versionedPolicyRowSchema) });

export const policyAuditQuerySchema = z.object({
  limit: wholeNumber("limit", 1, MAX_AUDIT_LIMIT, `The most entries, newest first (${DEFAULT_AUDIT_LIMIT}).`),
});

const snapshotSchema = editablePolicyFieldsSchema.extend({ version: z.number().int() });

export const policyAuditResultSchema = z.object({
  workspace: z.string(),
  entries: z.array(
    z.object({
      id: z.number().int(),
      workspaceId: z.string(),
      actor: z.string(),
      at: isoDate,
      before: snapshotSchema.nullable().meta({ description: "Null when the edit created the row." }),
      after: snapshotSchema.nullable().meta({ description: "Null when the edit deleted the row." }),
    }),
  ),
});
