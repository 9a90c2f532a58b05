/**
 * `auth.introspection`: where opaque bearer tokens (a platform's own API keys, not JWTs) are
 * checked, RFC 7662 style. The endpoint decides who a token speaks for, so it must be reached
 * over https (plain http to a loopback address only): whoever can rewrite its answer could
 * make any token speak for any workspace.
 *
 * An active answer is not enough: the authorization server vouches for every token it issued,
 * whichever service it was meant for. `audience` (the answer's `aud`) and/or `allowedClientIds`
 * (its `client_id`) say which tokens are meant for sandpool, as `auth.audience` does for JWTs;
 * `sandpool serve` refuses to start with neither unless `anyAudience: true` waives the check.
 */
import { z } from "zod";
import { isSecureOrLoopbackUrl } from "./loopback-host.js";

export const introspectionConfigSchema = z
  .strictObject({
    url: z.url({ protocol: /^https?$/ }).refine(isSecureOrLoopbackUrl, {
      message:
        "introspection url must use https (plain http only to a loopback address: 127.0.0.0/8, ::1, localhost), " +
        "or anyone on the path could make any token speak for any workspace",
    }),
    /** Sent as HTTP Basic credentials (RFC 7662 section 2.1: the endpoint authenticates its callers). */
    clientId: z.string().min(1),
    clientSecret: z.string().min(1),
    /** The answer's field holding the workspace; a dotted path reaches into an object field. */
    workspaceField: z.string().min(1).default("workspace_id"),
    /** An active answer is reused this long (never past its `exp`); 0 asks on every call. */
    cacheSeconds: z.number().int().min(0).max(3600).default(60),
    /** A refusal (inactive, no workspace) is reused this long, so a bad token cannot flood the endpoint. */
    refusalCacheSeconds: z.number().int().min(0).max(300).default(5),
    /** A slower answer fails the call with 503 `auth.introspection_unavailable`. */
    timeoutMs: z.number().int().min(1).max(60_000).default(3_000),
    /** The answer's `aud` (a string, or a list of them) must name this. */
    audience: z.string().min(1).optional(),
    /** The answer's `client_id` (the client the token was issued to) must be one of these. */
    allowedClientIds: z.array(z.string().min(1)).min(1).optional(),
    /** Accept active tokens whatever their `aud` and `client_id`: every token of the server is for sandpool. */
    anyAudience: z.boolean().default(false),
  })
  .refine((config) => !(config.anyAudience && (config.audience !== undefined || config.allowedClientIds)), {
    path: ["anyAudience"],
    message:
      "set audience (or allowedClientIds) or anyAudience: true, not both (anyAudience turns the audience check off)",
  });

export type IntrospectionConfig = z.output<typeof introspectionConfigSchema>;
