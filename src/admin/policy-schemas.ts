/**
 * The shapes of the workspace-policy operations (`/workspaces`, `/workspaces/{ws}/policy`,
 * `/workspaces/{ws}/audit`). The edit's body is the schema PolicyAdmin validates with
 * (src/policy/workspace-policy-fields.ts), imported, not copied; dates are ISO 8601 strings.
 */
import { z } from "zod";
import { toolKinds } from "../contract/schemas.js";
import { editablePolicyFieldsSchema } from "../store/sql/policy-row.js";
import { wholeNumber } from "./admin-params.js";

export { workspacePolicyFieldsSchema as policyEditSchema } from "../policy/workspace-policy-fields.js";

export const DEFAULT_AUDIT_LIMIT = 100;
export const MAX_AUDIT_LIMIT = 1_000;

const isoDate = z.string().meta({ description: "ISO 8601 date-time." });

/** A workspace's policy row: what it narrows, with its version and last editor. */
export const policyRowSchema = editablePolicyFieldsSchema.extend({
  workspaceId: z.string(),
  version: z.number().int(),
  updatedAt: isoDate,
  updatedBy: z.string(),
});

/** The values in force for a workspace: the deployment's, narrowed by its row. */
export const effectivePolicySchema = z.object({
  workspace: z.string(),
  configured: z.boolean(),
  enabled: z.boolean(),
  allowedImages: z.array(z.string()),
  defaultImage: z.string().nullable(),
  allowedTools: z.array(z.enum(toolKinds)),
  execTimeoutCeilingSeconds: z.number(),
  defaultExecTimeoutSeconds: z.number(),
  idleTimeoutCeilingSeconds: z.number(),
  maxLifetimeCeilingSeconds: z.number(),
  defaultIdleTimeoutSeconds: z.number(),
  defaultMaxLifetimeSeconds: z.number(),
  maxConcurrentSessions: z.number(),
  sessionsPerMinute: z.number(),
  execSecondsPerDay: z.number(),
  maxFileBytes: z.number(),
  resourceClass: z.string(),
  egressAllowed: z.boolean(),
  egressAllowCidrs: z.array(z.string()),
  egressAllowHosts: z.array(z.string()),
});

export const policySourceSchema = z.enum(["deployment", "workspace"]);

/** GET and PUT `/workspaces/{ws}/policy`: the row, the values in force, and where each comes from. */
export const policyViewSchema = z.object({
  workspace: z.string(),
  configured: z.boolean(),
  row: policyRowSchema.nullable(),
  effective: effectivePolicySchema,
  sources: z.record(z.string(), policySourceSchema),
});

export const workspacesResultSchema = z.object({ workspaces: z.array(policyRowSchema) });

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
