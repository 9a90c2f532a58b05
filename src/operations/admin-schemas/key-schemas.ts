/**
 * The shapes of the workspace API key operations (`/keys`). A key's secret is in the answer
 * of its creation only; listings carry neither it nor its hash.
 */
import { z } from "zod";
import { workspaceIdPattern } from "../../auth/workspace-claim.js";
import { pathParams, workspaceFilter } from "./admin-params.js";

const MAX_EXPIRY_SECONDS = 10 * 365 * 24 * 3600;

export const createKeySchema = z.strictObject({
  workspace: z.string().regex(workspaceIdPattern, "not a valid workspace id"),
  name: z.string().min(1).max(200).nullish(),
  expiresInSeconds: z
    .number()
    .int()
    .min(60)
    .max(MAX_EXPIRY_SECONDS)
    .optional()
    .meta({ description: "Seconds from now; unset: the key never expires (revoke it to end it)." }),
});

const nullableDate = z.string().nullable();

export const keyViewSchema = z.object({
  prefix: z.string(),
  workspace: z.string(),
  name: z.string().nullable(),
  createdAt: z.string(),
  createdBy: z.string().nullable(),
  lastUsedAt: nullableDate.meta({ description: "Lags by up to auth.apiKeyLastUsedFlushMs." }),
  expiresAt: nullableDate,
  revokedAt: nullableDate,
});

export const createdKeySchema = keyViewSchema.extend({
  key: z.string().meta({ description: "The whole key: shown this once, never again." }),
});

export const keysQuerySchema = z.object({ workspace: workspaceFilter });
export const keysResultSchema = z.object({ items: z.array(keyViewSchema) });
export const keyParams = pathParams("prefix", "The key's prefix.");
export const revokedResultSchema = z.object({ revoked: keyViewSchema });
