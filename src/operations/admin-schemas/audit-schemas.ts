/**
 * The shapes of the audit trail (`GET /audit`, src/store/sql/audit-repository.ts): refused
 * contract calls (`kind=denied`) and operators' changes (`kind=admin`), newest first.
 */
import { z } from "zod";
import { AUDIT_KINDS } from "../../store/sql/audit-repository.js";
import { instant, oneOf, wholeNumber, workspaceFilter } from "./admin-params.js";

export const DEFAULT_AUDIT_ITEMS = 100;
export const MAX_AUDIT_ITEMS = 1_000;

export const auditQuerySchema = z.object({
  workspace: workspaceFilter,
  kind: oneOf("kind", AUDIT_KINDS, "Only refusals, or only operators' changes (both).", {
    emptyIsAbsent: true,
  }),
  since: instant("since", "Only items from this instant on."),
  until: instant("until", "Only items before this instant."),
  limit: wholeNumber("limit", 1, MAX_AUDIT_ITEMS, `The most items (${DEFAULT_AUDIT_ITEMS}).`),
});

const deniedItemSchema = z.object({
  kind: z.literal("denied"),
  at: z.string(),
  workspace: z.string(),
  operation: z.string().meta({ description: "The contract operation refused (`sessions.exec`)." }),
  code: z.string(),
  status: z.number().int().nullable(),
  principal: z
    .string()
    .nullable()
    .meta({ description: "Who was refused (the first of the merged refusals): a token's subject or id." }),
  sessionId: z.string().nullable().meta({
    description: "The session the call named (the first of the merged refusals'); null for CreateSession.",
  }),
  count: z
    .number()
    .int()
    .meta({ description: "Refusals of the workspace with this operation and code within one second." }),
  sessions: z.number().int().meta({ description: "Distinct session ids they named (counted up to 100)." }),
  principals: z
    .number()
    .int()
    .meta({ description: "Distinct principals that made them (counted up to 100)." }),
});

const adminItemSchema = z.object({
  kind: z.literal("admin"),
  at: z.string(),
  workspace: z.string().nullable(),
  actor: z.string(),
  action: z.string().meta({ description: "`policy.edit`, `key.created`, `session.end`, `pool.resize`, ..." }),
  target: z.string(),
  detail: z.record(z.string(), z.unknown()).nullable(),
});

export const auditResultSchema = z.object({
  items: z.array(z.discriminatedUnion("kind", [deniedItemSchema, adminItemSchema])),
});
