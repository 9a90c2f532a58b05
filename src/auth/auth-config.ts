/**
 * How bearer tokens are verified: one key source (HS256 secret, public key, or JWKS URL), an
 * explicit algorithm allow-list derived from that source, and the claim checks. Every rule that
 * keeps a forged token out is decided here, at start-up, not per request.
 */
import { z } from "zod";
import { settingDocs } from "../contract/setting-docs.js";
import { introspectionConfigSchema } from "./introspection-config.js";
import { isSecureOrLoopbackUrl } from "./loopback-host.js";
import { asymmetricAlgorithms, hmacAlgorithms, readPublicKey } from "./public-key-algorithms.js";

const keySources = ["jwtSecret", "jwtPublicKey", "jwksUrl"] as const;

export const authConfigSchema = z
  .strictObject({
    /** HS256 shared secret; 32 bytes at least, the strength of the SHA-256 it keys. */
    jwtSecret: z
      .string()
      .refine((s) => Buffer.byteLength(s, "utf8") >= 32, "jwtSecret must be at least 32 bytes")
      .optional()
      .register(settingDocs, {
        doc: "Key source: an HS256 shared secret of 32 bytes or more.",
        example: "change-me-to-32-bytes-or-more-0123456789",
        env: {
          name: "SANDPOOL_JWT_SECRET",
          description: "HS256 secret (32 bytes at least); replaces the file's key source",
          replaces: ["jwtPublicKey", "jwksUrl"],
        },
      }),
    /** PEM SPKI public key (RSA, EC P-256/384/521, Ed25519) or a public JWK as a JSON string. */
    jwtPublicKey: z
      .string()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "Key source: a PEM (SPKI) public key, RSA, EC or Ed25519, or a public JWK as JSON.",
        example: "-----BEGIN PUBLIC KEY-----\n...\n-----END PUBLIC KEY-----\n",
        env: {
          name: "SANDPOOL_JWT_PUBLIC_KEY",
          description:
            "PEM public key or public JWK (a literal \\n becomes a newline); replaces the file's key source",
          parse: (value) => value.replace(/\\n/g, "\n"),
          replaces: ["jwtSecret", "jwksUrl"],
        },
      }),
    /**
     * Only over https: whoever can rewrite a plain-http answer chooses the keys we trust.
     * Plain http is accepted for a loopback address alone (an issuer on this machine).
     */
    jwksUrl: z
      .url({ protocol: /^https?$/ })
      .refine(isSecureOrLoopbackUrl, {
        message:
          "jwksUrl must use https (plain http only to a loopback address: 127.0.0.0/8, ::1, localhost), " +
          "or anyone on the path could substitute their own signing keys",
      })
      .optional()
      .register(settingDocs, {
        doc: "Key source: the JWKS URL of your identity provider; https (plain http only to loopback).",
        example: "https://issuer.example/.well-known/jwks.json",
        active: true,
        env: {
          name: "SANDPOOL_JWKS_URL",
          description: "JWKS URL of the token issuer; replaces the file's key source",
          replaces: ["jwtSecret", "jwtPublicKey"],
        },
      }),
    /** Allow-list of JWS algorithms; derived from the key source when absent. */
    algorithms: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "Accepted JWS algorithms; derived from the key source when unset (never none).",
        example: ["RS256", "ES256"],
      }),
    issuer: z
      .string()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "Required iss claim; not checked when unset.",
        example: "https://issuer.example/",
        env: { name: "SANDPOOL_JWT_ISSUER", description: "required iss claim" },
      }),
    audience: z
      .string()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "Required aud claim; sandpool serve refuses to start without it unless anyAudience is true.",
        example: "sandpool",
        active: true,
        env: { name: "SANDPOOL_JWT_AUDIENCE", description: "required aud claim" },
      }),
    /**
     * Accept tokens whatever their `aud`. `sandpool serve` refuses to start with neither this
     * nor `audience`: a token minted by the same issuer for another service would work here.
     */
    anyAudience: z
      .boolean()
      .default(false)
      .register(settingDocs, {
        doc: "Accept any aud claim (no audience check); only if every token of the issuer is meant for sandpool.",
        env: {
          name: "SANDPOOL_JWT_ANY_AUDIENCE",
          description: "accept any aud claim (true/false); serve needs this or an audience",
        },
      }),
    /**
     * Refuse tokens issued (`iat`) longer ago than this, and tokens without `iat`, whatever
     * their `exp` says: bounds the life of a leaked long-lived token. Unset: `exp` alone.
     */
    maxTokenAgeSeconds: z
      .number()
      .int()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "Refuse tokens issued (iat) longer ago than this, or without iat; unset: exp alone decides.",
        example: 86400,
        env: {
          name: "SANDPOOL_JWT_MAX_TOKEN_AGE_SECONDS",
          description: "refuse tokens whose iat is older (or absent)",
        },
      }),
    clockToleranceSeconds: z
      .number()
      .int()
      .min(0)
      .max(300)
      .default(30)
      .register(settingDocs, { doc: "Clock skew allowed when checking exp and nbf, in seconds." }),
    /** Claim holding the workspace; a dotted path reaches into an object claim when no literal claim has that name. */
    workspaceClaim: z
      .string()
      .min(1)
      .default("workspace_id")
      .register(settingDocs, {
        doc: "Claim holding the workspace id; a dotted path reaches into an object claim.",
        env: { name: "SANDPOOL_WORKSPACE_CLAIM", description: "claim holding the workspace id" },
      }),
    /**
     * Claim that makes a token an admin token (the admin API) when it is the JSON `true`; any
     * other value, or none, is an ordinary token. An admin token's workspace claim is optional.
     */
    adminClaim: z.string().min(1).default("sandpool_admin").register(settingDocs, {
      doc: "Claim that makes a token an admin token (admin API) when it is true; its workspace is then optional.",
    }),
    /** Least time between two JWKS fetches, so unknown `kid`s cannot make us hammer the issuer. */
    jwksCooldownMs: z.number().int().min(0).default(30_000).register(settingDocs, {
      doc: "Least time between two JWKS fetches, so unknown kids cannot hammer the issuer.",
    }),
    /** A fetched JWKS is trusted this long before being refreshed. */
    jwksCacheMaxAgeMs: z
      .number()
      .int()
      .min(1_000)
      .default(600_000)
      .register(settingDocs, { doc: "A fetched JWKS is trusted this long before it is refreshed." }),
    /** A JWKS fetch slower than this fails the request (401) instead of holding it. */
    jwksTimeoutMs: z
      .number()
      .int()
      .min(1)
      .default(5_000)
      .register(settingDocs, { doc: "A slower JWKS fetch fails the request (401) instead of holding it." }),
    /**
     * A token that passed verification is trusted again for this long (never past its exp)
     * without checking its signature; 0 verifies every request. Bounds how long a token
     * signed by a key since removed from the JWKS keeps working.
     */
    verifiedTokenCacheSeconds: z.number().int().min(0).max(3600).default(60).register(settingDocs, {
      doc: "A verified token is trusted again this long (never past exp) without a signature check; 0: never.",
    }),
    /** Opaque (non-JWT) bearer tokens checked at the platform's RFC 7662 endpoint; off when unset. */
    introspection: introspectionConfigSchema.optional().register(settingDocs, {
      doc: "Opaque (non-JWT) bearer tokens checked at your platform's RFC 7662 introspection endpoint. Order: sp_ keys, then JWTs, then this.",
    }),
    /**
     * A sandpool API key's record (workspace, expiry, revocation) is reused this long before it
     * is read again; revocations reach every replica at once by pub/sub, this only bounds a lost message.
     */
    apiKeyCacheSeconds: z.number().int().min(1).max(3600).default(60).register(settingDocs, {
      doc: "A workspace API key's record is reused this long; revocations reach every replica at once by pub/sub.",
    }),
    /** How often the last use of API keys is written (one write per key used, not per call). */
    apiKeyLastUsedFlushMs: z
      .number()
      .int()
      .min(100)
      .default(30_000)
      .register(settingDocs, { doc: "How often API keys' last use is written (batched, not per call)." }),
  })
  .transform((config, ctx) => {
    if (config.anyAudience && config.audience !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["anyAudience"],
        message: "set audience or anyAudience: true, not both (anyAudience turns the audience check off)",
      });
      return z.NEVER;
    }
    const configured = keySources.filter((name) => config[name] !== undefined);
    if (configured.length !== 1) {
      const found =
        configured.length === 0
          ? "none is set"
          : `${configured.join(" and ")} are ${configured.length === 2 ? "both" : "all"} set`;
      ctx.addIssue({
        code: "custom",
        message: `configure exactly one of ${keySources.join(", ")} (${found})`,
      });
      return z.NEVER;
    }
    let verifiable: readonly string[];
    if (config.jwtSecret !== undefined) verifiable = hmacAlgorithms;
    else if (config.jwtPublicKey !== undefined) {
      try {
        verifiable = readPublicKey(config.jwtPublicKey).algorithms;
      } catch (error) {
        ctx.addIssue({
          code: "custom",
          path: ["jwtPublicKey"],
          message: `jwtPublicKey ${(error as Error).message}`,
        });
        return z.NEVER;
      }
    } else verifiable = asymmetricAlgorithms;

    const source = configured[0]!;
    const requested = config.algorithms ?? (source === "jwtSecret" ? ["HS256"] : verifiable);
    const refused = requested.map((alg) => refusal(alg, source, verifiable)).filter((m) => m !== undefined);
    for (const message of refused) ctx.addIssue({ code: "custom", path: ["algorithms"], message });
    if (refused.length > 0) return z.NEVER;
    return { ...config, algorithms: [...new Set(requested)] };
  });

function refusal(alg: string, source: string, verifiable: readonly string[]): string | undefined {
  if (alg.toLowerCase() === "none")
    return "algorithm 'none' is never accepted: unsigned tokens would let anyone in";
  if (hmacAlgorithms.includes(alg) && source !== "jwtSecret")
    return `${alg} cannot be combined with ${source}: HMAC keyed with public material lets anyone forge tokens`;
  if (!verifiable.includes(alg))
    return `${alg} cannot be verified with the configured ${source} (it can verify ${verifiable.join(", ")})`;
  return undefined;
}

export type AuthConfigInput = z.input<typeof authConfigSchema>;
export type AuthConfig = z.output<typeof authConfigSchema>;
