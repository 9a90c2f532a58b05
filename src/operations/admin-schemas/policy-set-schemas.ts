/**
 * The shapes of policy as code (`GET` and `PUT /policies`, src/policy/policy-set.ts). The
 * set's body is admitted as any JSON object: validatePolicySet (in PolicyAdmin) judges its
 * entries, listing every problem of every entry at once, which a schema refusing at the
 * first bad entry could not.
 */
import { z } from "zod";
import { editablePolicyFieldsSchema } from "../../store/sql/policy-row.js";
import { flag } from "./admin-params.js";
import { versionedPolicyRowSchema } from "./policy-schemas.js";

const entrySchema = editablePolicyFieldsSchema.partial().meta({
  description: "What the workspace narrows; a field left out is the deployment's value.",
});

export const policySetSchema = z.object({
  policies: z.record(z.string(), entrySchema).meta({ description: "Every workspace's policy, by id." }),
});

export const policySetBodySchema = z
  .looseObject(
    {
      policies: z.unknown().meta({
        description:
          "{ <workspace>: { <field>: value, secrets?: { <name>: binding } } }: a workspace left out loses its row; `policies: {}` removes every row.",
      }),
    },
    { error: "must be an object: { policies: { <workspace>: {...} } }" },
  )
  .meta({ description: "A policy set (the shape `sandpool policy export` prints)." });

export const applyQuerySchema = z.object({
  dryRun: flag("dryRun", "true: answer what would change, change nothing."),
});

export const applyResultSchema = z.object({
  dryRun: z.boolean(),
  changed: z.boolean(),
  secrets: z
    .array(z.object({ workspace: z.string(), name: z.string(), action: z.enum(["rebind", "unchanged"]) }))
    .optional()
    .meta({
      description: "The secrets the file binds (docs/secrets.md): their bindings replaced, values kept.",
    }),
  changes: z.array(
    z.object({
      workspace: z.string(),
      action: z.enum(["create", "update", "delete", "unchanged"]),
      before: versionedPolicyRowSchema.nullable(),
      after: editablePolicyFieldsSchema.nullable(),
    }),
  ),
});
