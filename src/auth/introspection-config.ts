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
import { settingDocs } from "../contract/setting-docs.js";
import { isSecureOrLoopbackUrl } from "./loopback-host.js";

export const introspectionConfigSchema = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/ })
      .refine(isSecureOrLoopbackUrl, {
        message:
          "introspection url must use https (plain http only to a loopback address: 127.0.0.0/8, ::1, localhost), " +
          "or anyone on the path could make any token speak for any workspace",
      })
      .register(settingDocs, {
        doc: "The introspection endpoint; https (plain http only to loopback). Env SANDPOOL_INTROSPECTION_URL.",
        example: "https://platform.example/oauth/introspect",
        env: {
          name: "SANDPOOL_INTROSPECTION_URL",
          description: "RFC 7662 endpoint checking opaque bearer tokens (https, or http to loopback)",
        },
      }),
    /** Sent as HTTP Basic credentials (RFC 7662 section 2.1: the endpoint authenticates its callers). */
    clientId: z
      .string()
      .min(1)
      .register(settingDocs, {
        doc: "Client id sent as HTTP Basic credentials. Env SANDPOOL_INTROSPECTION_CLIENT_ID.",
        example: "sandpool",
        env: { name: "SANDPOOL_INTROSPECTION_CLIENT_ID", description: "client id sent to the endpoint" },
      }),
    clientSecret: z
      .string()
      .min(1)
      .register(settingDocs, {
        doc: "Client secret sent as HTTP Basic credentials. Env SANDPOOL_INTROSPECTION_CLIENT_SECRET.",
        example: "change-me",
        env: {
          name: "SANDPOOL_INTROSPECTION_CLIENT_SECRET",
          description: "client secret sent to the endpoint",
        },
      }),
    /** The answer's field holding the workspace; a dotted path reaches into an object field. */
    workspaceField: z.string().min(1).default("workspace_id").register(settingDocs, {
      doc: "Field of the answer holding the workspace id; a dotted path reaches into an object.",
    }),
    /** An active answer is reused this long (never past its `exp`); 0 asks on every call. */
    cacheSeconds: z.number().int().min(0).max(3600).default(60).register(settingDocs, {
      doc: "An active answer is reused this long, never past its exp; 0: ask on every call.",
    }),
    /** A refusal (inactive, no workspace) is reused this long, so a bad token cannot flood the endpoint. */
    refusalCacheSeconds: z
      .number()
      .int()
      .min(0)
      .max(300)
      .default(5)
      .register(settingDocs, { doc: "A refusal (inactive, no workspace) is reused this long." }),
    /** A slower answer fails the call with 503 `auth.introspection_unavailable`. */
    timeoutMs: z.number().int().min(1).max(60_000).default(3_000).register(settingDocs, {
      doc: "A slower endpoint fails the call with 503 auth.introspection_unavailable (never a default tenant).",
    }),
    /** The answer's `aud` (a string, or a list of them) must name this. */
    audience: z
      .string()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "The aud an active answer must name; sandpool serve refuses to start without it (or allowedClientIds) unless anyAudience is true. Env SANDPOOL_INTROSPECTION_AUDIENCE.",
        example: "sandpool",
        env: {
          name: "SANDPOOL_INTROSPECTION_AUDIENCE",
          description: "the aud an introspected token must carry",
        },
      }),
    /** The answer's `client_id` (the client the token was issued to) must be one of these. */
    allowedClientIds: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "The client_ids an active answer may name (the clients tokens meant for sandpool are issued to). Env SANDPOOL_INTROSPECTION_ALLOWED_CLIENT_IDS.",
        example: ["agent-runner"],
        env: {
          name: "SANDPOOL_INTROSPECTION_ALLOWED_CLIENT_IDS",
          description: "client_ids an introspected token may be issued to, comma-separated",
        },
      }),
    /** Accept active tokens whatever their `aud` and `client_id`: every token of the server is for sandpool. */
    anyAudience: z
      .boolean()
      .default(false)
      .register(settingDocs, {
        doc: "Accept every active token of the server, whatever its aud and client_id; only if all of them are meant for sandpool.",
        env: {
          name: "SANDPOOL_INTROSPECTION_ANY_AUDIENCE",
          description:
            "accept introspected tokens of any aud (true/false); serve needs this, an audience or client ids",
        },
      }),
  })
  .refine((config) => !(config.anyAudience && (config.audience !== undefined || config.allowedClientIds)), {
    path: ["anyAudience"],
    message:
      "set audience (or allowedClientIds) or anyAudience: true, not both (anyAudience turns the audience check off)",
  });

export type IntrospectionConfig = z.output<typeof introspectionConfigSchema>;
