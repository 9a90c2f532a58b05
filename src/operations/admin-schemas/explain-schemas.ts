/**
 * The shapes of `POST /admin/v1/explain` for the registry (and so the OpenAPI document). The
 * body's schema checks the types; src/explain/explain-request.ts checks the rest (a valid
 * workspace id, a contract operation, the arguments a call on a session needs) and lists
 * every problem.
 */
import { z } from "zod";
import { contractOperations } from "../contract-operations.js";

const ids = contractOperations.map((operation) => operation.id).join(", ");

export const explainBodySchema = z
  .looseObject({
    workspace: z.string().describe("The workspace whose call to explain (a workspace id)."),
    operation: z.string().describe(`The contract operation: one of ${ids}.`),
    args: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        "The operation's own request: the CreateSession body; for a call on a session its session_id " +
          "and, for sessions.exec, the Execute body; for files.put an optional content_length.",
      ),
    token: z
      .string()
      .optional()
      .describe(
        "A bearer token to check with the gateway's authenticator: the trace's first step says whether it " +
          "is valid (and why not) and its workspace, and the rest is evaluated for that workspace. Never echoed.",
      ),
    egressHost: z
      .string()
      .optional()
      .describe(
        "A destination (host or host:port, port 443 by default): whether a session of the call (its sandpool " +
          "narrowing, or the named session's) could reach it, by which rule not, and which secrets (names) " +
          "the egress proxy would attach. Answered in `egress`; it does not change the call's decision.",
      ),
  })
  .describe("A would-be contract call: { workspace, operation, args, token?, egressHost? }.");

const stepSchema = z.object({
  step: z.enum(["token", "mounted", "args", "resolve", "policy", "admit"]),
  verdict: z.enum(["pass", "deny", "skip"]),
  rule: z.string().optional(),
  field: z.string().optional(),
  value: z.unknown().optional(),
  limit: z.unknown().optional(),
  detail: z.string().optional(),
  code: z.string().optional(),
});

export const explainResultSchema = z.object({
  workspace: z.string(),
  operation: z.string(),
  decision: z.enum(["allow", "deny"]),
  code: z.string().nullable().describe("The error code the real call would get; null when allowed."),
  steps: z.array(stepSchema),
  effective: z
    .record(z.string(), z.unknown())
    .describe("The limits in force, and what the call would run under."),
  token: z
    .object({
      valid: z.boolean(),
      reason: z
        .string()
        .nullable()
        .describe(
          "Why it is refused (a sandpool_auth_failures_total reason: expired, bad_signature, unknown_key...).",
        ),
      workspace: z
        .string()
        .nullable()
        .describe("The workspace its calls go to; null when refused or naming none."),
      admin: z.boolean(),
      expires: z.string().nullable().describe("When it stops being accepted; null when refused."),
    })
    .optional()
    .describe("The token the request carried, when it carried one (never the token itself)."),
  egress: z
    .object({
      destination: z.string(),
      decision: z.enum(["allow", "deny"]),
      steps: z.array(stepSchema),
      secrets: z.array(z.string()).describe("The secrets the proxy would attach there (names only)."),
    })
    .optional()
    .describe("With egressHost: the destination's own trace."),
});
