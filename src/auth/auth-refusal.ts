/**
 * Why a credential was refused, from a fixed set: the `reason` label of
 * `sandpool_auth_failures_total`, so operators can tell expired tokens from forged ones or a
 * misconfigured client. The caller still gets one answer for every reason (401 `auth.invalid`,
 * same message): the reason is for metrics and logs, never for the response, and never
 * carries the credential.
 */
import { SandpoolError } from "../contract/error-codes.js";

export const authFailureReasons = [
  /** No Authorization header, or an empty one. */
  "missing",
  /** Not a bearer credential, too long, or not a well-formed JWT or key. */
  "malformed",
  "expired",
  "bad_signature",
  "bad_algorithm",
  /** Issuer, audience, maximum age or another checked claim. */
  "bad_claims",
  /** The JWKS has no key for the token (or the key set could not be read). */
  "unknown_signing_key",
  /** A sandpool API key that does not exist, or the wrong secret for its prefix. */
  "unknown_key",
  "revoked_key",
  "expired_key",
  /** The introspection endpoint said inactive, or named no usable workspace. */
  "introspection_refused",
  /** Neither a JWT nor a sandpool key, and no introspection endpoint is configured. */
  "unrecognised",
  /** A valid token that names no workspace on a contract route (an admin token). */
  "no_workspace",
  /** A valid token without the admin claim on the admin API. */
  "not_admin",
  /** Refused unverified: the credential or the address kept failing. */
  "rate_limited",
  /** The introspection endpoint did not answer: says nothing about the credential. */
  "introspection_unavailable",
  "other",
] as const;
export type AuthFailureReason = (typeof authFailureReasons)[number];

/** A refused credential: `auth.invalid` (or `auth.missing`) with the reason kept for metrics. */
export class AuthRefusal extends SandpoolError {
  constructor(
    readonly reason: AuthFailureReason,
    detail: string,
  ) {
    super(
      reason === "missing" ? "auth.missing" : "auth.invalid",
      reason === "missing" ? "a bearer token is required" : "invalid bearer token",
      { cause: new Error(detail) },
    );
  }
}

/** The reason label for any authentication failure. */
export function authFailureReason(error: unknown): AuthFailureReason {
  if (error instanceof AuthRefusal) return error.reason;
  if (!(error instanceof SandpoolError)) return "other";
  switch (error.code) {
    case "auth.missing":
      return "missing";
    case "auth.rate_limited":
      return "rate_limited";
    case "auth.introspection_unavailable":
      return "introspection_unavailable";
    case "auth.forbidden":
      return "not_admin";
    default:
      return "other";
  }
}

/** What a jose error code says went wrong with a JWT. */
export function joseFailureReason(code: string | undefined): AuthFailureReason {
  switch (code) {
    case "ERR_JWT_EXPIRED":
      return "expired";
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return "bad_signature";
    case "ERR_JOSE_ALG_NOT_ALLOWED":
    case "ERR_JOSE_NOT_SUPPORTED":
      return "bad_algorithm";
    case "ERR_JWT_CLAIM_VALIDATION_FAILED":
      return "bad_claims";
    case "ERR_JWKS_NO_MATCHING_KEY":
    case "ERR_JWKS_MULTIPLE_MATCHING_KEYS":
    case "ERR_JWKS_TIMEOUT":
    case "ERR_JWKS_INVALID":
      return "unknown_signing_key";
    default:
      return "malformed";
  }
}
