/**
 * Why a credential was refused, from a fixed set: the `reason` label of
 * `sandpool_auth_failures_total`, so operators can tell expired tokens from forged ones or a
 * misconfigured client. A credential that failed its checks gets one answer whatever stopped
 * it (401 `auth.invalid`, same message), so a caller probing with forged tokens learns
 * nothing. Only what a genuine credential's holder is owed is told apart: an expired token
 * or key (401 `auth.expired`; a JWT's `exp` is read only once its signature has been
 * verified) and a valid token that names no workspace (an admin token on a contract route,
 * told where admin tokens go). The reason never carries the credential.
 */
import { type ErrorCode, SandpoolError } from "../contract/error-codes.js";

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

/** Reasons found only after the credential proved genuine: the caller may be told which. */
const toldReasons = new Set<AuthFailureReason>(["expired", "expired_key", "no_workspace"]);

function codeOf(reason: AuthFailureReason): ErrorCode {
  if (reason === "missing") return "auth.missing";
  return reason === "expired" || reason === "expired_key" ? "auth.expired" : "auth.invalid";
}

const defaultMessages: Partial<Record<AuthFailureReason, string>> = {
  missing: "a bearer token is required",
  expired: "the bearer token has expired: get a new one",
  expired_key: "the API key has expired: ask for a new one",
};

/**
 * A refused credential: `auth.invalid`, `auth.missing` or `auth.expired`, with the reason kept
 * for metrics. `detail` is for operators (the error's cause); `told` is the caller's message,
 * used only for a reason the caller may know (`toldReasons`), never for a forged credential.
 */
export class AuthRefusal extends SandpoolError {
  constructor(
    readonly reason: AuthFailureReason,
    detail: string,
    told?: string,
  ) {
    const message = toldReasons.has(reason) ? (told ?? defaultMessages[reason]) : defaultMessages[reason];
    super(codeOf(reason), message ?? "invalid bearer token", { cause: new Error(detail) });
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
