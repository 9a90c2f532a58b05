/**
 * Pipeline step 3, authenticate: turns an `Authorization: Bearer <jwt>` header into a Caller,
 * or refuses.
 * An ordinary token must name a workspace; an admin token (the admin claim is `true`) may name
 * none, or `*`, and is then scoped to no workspace (contract routes refuse it).
 * Every refusal of a token that fails its checks is the same `auth.invalid` with the same
 * message, so a caller probing with forged tokens learns nothing about which check stopped it;
 * a genuine token past its `exp` (jose checks the signature before the claims) is 401
 * `auth.expired`, saying when, and one naming no workspace says so. The reason is kept in the
 * error's `cause` (a jose error code, never the token or its claims) for operators.
 */
import { webcrypto } from "node:crypto";
import {
  createRemoteJWKSet,
  errors,
  importJWK,
  importSPKI,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from "jose";
import { type AuthConfig, authConfigSchema } from "./auth-config.js";
import { AuthRefusal, joseFailureReason } from "./auth-refusal.js";
import type { Caller } from "./principal.js";
import { readPublicKey } from "./public-key-algorithms.js";
import { readWorkspaceClaim } from "./workspace-claim.js";

// Far above any real JWT; bounds the parsing a caller can make us do before the signature check.
const maxAuthorizationLength = 16 * 1024;
const bearerPattern = /^Bearer[ \t]+(\S+)$/i;

type Key = Awaited<ReturnType<JWTVerifyGetKey>>;

export class JwtAuthenticator {
  readonly #config: AuthConfig;
  #getKey: JWTVerifyGetKey | undefined;

  constructor(config: AuthConfig) {
    // Parsing again is idempotent for a parsed config and stops a hand-built object from
    // slipping past the `none` and HS/RS-confusion guards.
    this.#config = authConfigSchema.parse(config);
  }

  async authenticate(authorization: string | undefined): Promise<Caller> {
    const token = bearerToken(authorization);
    let claims: JWTPayload;
    try {
      const verified = await jwtVerify(token, this.#keyResolver(), {
        algorithms: this.#config.algorithms,
        issuer: this.#config.issuer,
        audience: this.#config.audience,
        clockTolerance: this.#config.clockToleranceSeconds,
        requiredClaims: ["exp"],
        // jose then also requires `iat`, and refuses a token older than this.
        maxTokenAge: this.#config.maxTokenAgeSeconds,
      });
      claims = verified.payload;
    } catch (error) {
      const code = error instanceof errors.JOSEError ? error.code : undefined;
      throw new AuthRefusal(joseFailureReason(code), code ?? "verification failed", expiryMessage(error));
    }
    // Own property and the JSON `true` only: "true", 1 or an inherited value is no admin.
    const admin = Object.hasOwn(claims, this.#config.adminClaim) && claims[this.#config.adminClaim] === true;
    const workspace = readWorkspaceClaim(claims, this.#config.workspaceClaim);
    // An admin token without a usable workspace is unscoped: it gains nothing on contract routes,
    // which refuse a caller without a workspace.
    if (workspace === undefined && !admin)
      throw new AuthRefusal(
        "no_workspace",
        "workspace claim missing or malformed",
        `the token names no workspace (its '${this.#config.workspaceClaim}' claim is missing or not a workspace id)`,
      );
    return {
      workspace,
      // Only admin tokens carry the flag, so an ordinary principal is what it always was.
      ...(admin ? { admin: true } : {}),
      subject: typeof claims.sub === "string" ? claims.sub : undefined,
      tokenId: typeof claims.jti === "string" ? claims.jti : undefined,
      expiresAt: usableUntil(claims, this.#config.maxTokenAgeSeconds),
    };
  }

  /** Built on first use: start-up stays offline, and each key is imported once. */
  #keyResolver(): JWTVerifyGetKey {
    this.#getKey ??= this.#createKeyResolver();
    return this.#getKey;
  }

  #createKeyResolver(): JWTVerifyGetKey {
    const { jwtSecret, jwtPublicKey, jwksUrl } = this.#config;
    if (jwtSecret !== undefined) {
      // Imported once per algorithm as a CryptoKey: raw bytes would be re-imported on
      // every verification, which costs more than the verification itself.
      const secret = new TextEncoder().encode(jwtSecret);
      const imported = new Map<string, Promise<webcrypto.CryptoKey>>();
      return async ({ alg }) => {
        const hash = alg === undefined ? undefined : hmacHashes[alg];
        if (hash === undefined) throw new errors.JOSEAlgNotAllowed("algorithm not allowed");
        let key = imported.get(alg!);
        if (key === undefined) {
          key = webcrypto.subtle.importKey("raw", secret, { name: "HMAC", hash }, false, ["verify"]);
          imported.set(alg!, key);
        }
        return key;
      };
    }
    if (jwksUrl !== undefined) {
      return createRemoteJWKSet(new URL(jwksUrl), {
        timeoutDuration: this.#config.jwksTimeoutMs,
        cooldownDuration: this.#config.jwksCooldownMs,
        cacheMaxAge: this.#config.jwksCacheMaxAgeMs,
      });
    }
    // A WebCrypto key is bound to one algorithm (RS256 and PS256 need two imports of one RSA
    // key), so keys are imported per algorithm, on demand, once.
    const { source } = readPublicKey(jwtPublicKey!);
    const imported = new Map<string, Promise<Key>>();
    const allowed = new Set(this.#config.algorithms);
    return async ({ alg }) => {
      // jose has already refused an algorithm outside the allow-list; this keeps the resolver
      // safe on its own should that ever change.
      if (alg === undefined || !allowed.has(alg)) throw new errors.JOSEAlgNotAllowed("algorithm not allowed");
      let key = imported.get(alg);
      if (key === undefined) {
        key = source.format === "spki" ? importSPKI(source.pem, alg) : importJWK(source.jwk, alg);
        imported.set(alg, key);
      }
      return key;
    };
  }
}

const hmacHashes: Record<string, string> = { HS256: "SHA-256", HS384: "SHA-384", HS512: "SHA-512" };

/**
 * What the holder of a genuine but expired token is told: when it expired, or that it was
 * issued longer ago than `auth.maxTokenAgeSeconds` allows. Undefined for any other failure.
 */
function expiryMessage(error: unknown): string | undefined {
  if (!(error instanceof errors.JWTExpired)) return undefined;
  if (error.claim === "iat")
    return "the bearer token was issued too long ago for this gateway: get a new one";
  const exp = error.payload.exp;
  return typeof exp === "number" && Number.isFinite(exp) && Math.abs(exp) < 8.64e12
    ? `the bearer token expired at ${new Date(exp * 1000).toISOString()}: get a new one`
    : undefined;
}

/**
 * When the token stops being acceptable: its `exp` (jose has checked it is a number), or sooner
 * when a maximum age ends it first, so a cache of verified tokens cannot outlive that age.
 */
function usableUntil(claims: JWTPayload, maxTokenAgeSeconds: number | undefined): number {
  const exp = claims.exp!;
  if (maxTokenAgeSeconds === undefined || typeof claims.iat !== "number") return exp;
  return Math.min(exp, claims.iat + maxTokenAgeSeconds);
}

function bearerToken(authorization: string | undefined): string {
  const value = authorization?.trim() ?? "";
  if (value === "") throw new AuthRefusal("missing", "no credential");
  if (value.length > maxAuthorizationLength)
    throw new AuthRefusal("malformed", "authorization header too long");
  const token = bearerPattern.exec(value)?.[1];
  if (token === undefined) throw new AuthRefusal("malformed", "not a bearer credential");
  return token;
}
