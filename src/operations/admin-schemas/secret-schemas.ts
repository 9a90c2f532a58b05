/**
 * The shapes of the workspace secrets operations (`/workspaces/{ws}/secrets`). A secret's
 * value goes in (PUT) and never comes out: every answer describes the secret by its name and
 * binding only. The rules a binding must meet are in src/secrets/secret-binding-schema.ts.
 */
import { z } from "zod";
import {
  SECRET_NAME_PATTERN,
  SECRET_NAME_RULE,
  secretPutSchema,
} from "../../secrets/secret-binding-schema.js";
import { workspacePathParams } from "./admin-params.js";

export const secretParams = workspacePathParams.extend({
  name: z
    .string()
    .regex(SECRET_NAME_PATTERN, `not a secret name (${SECRET_NAME_RULE})`)
    .meta({ description: "The secret's name within its workspace." }),
});

export const secretBodySchema = secretPutSchema.meta({
  description:
    "The value and where it may be sent: header and template (Authorization, Bearer {{secret}}) or basicAuth.",
});

export const secretViewSchema = z
  .object({
    workspace: z.string(),
    name: z.string(),
    hosts: z.array(z.string()),
    ports: z.array(z.number()).optional(),
    paths: z.array(z.string()).optional(),
    methods: z.array(z.string()).optional(),
    header: z.string().optional(),
    template: z.string().optional(),
    basicAuth: z.object({ username: z.string() }).optional(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ description: "A secret as operators see it: its binding, never its value." });

export const secretsResultSchema = z.object({ items: z.array(secretViewSchema) });
