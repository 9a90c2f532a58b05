/**
 * The bearer check, once for every route and transport: an `Authorization` header to the
 * caller it speaks for, under the failed-attempt limits. A credential that keeps failing is
 * refused (429) before any verification work is spent on it. An address that keeps failing
 * gets 429 instead of 401 for its failures, but a valid token from it still passes: behind a
 * shared proxy every tenant has the same address, and one tenant's stale token must not lock
 * the others out. Every refusal is counted by its reason (never by the credential).
 */
import { SandpoolError } from "../contract/error-codes.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import { authFailureReason } from "./auth-refusal.js";
import { credentialFingerprint, type FailedAuthLimiter } from "./failed-auth-limiter.js";
import type { BearerAuthenticator, Caller } from "./principal.js";

/** What checking a bearer needs: the gateway's authenticator, its limiter and its metrics. */
export interface BearerCheck {
  authenticator: BearerAuthenticator;
  authLimiter: FailedAuthLimiter;
  metrics: Pick<GatewayMetrics, "authFailures">;
}

function rateLimited(retryAfterSeconds: number): SandpoolError {
  return new SandpoolError("auth.rate_limited", "too many failed authentication attempts", {
    retryAfterSeconds,
  });
}

/**
 * Verifies an `Authorization` header under the failed-attempt limits: the caller it speaks
 * for, or the refusal (401, or 429 for a source that keeps failing).
 */
export async function verifyBearer(
  check: BearerCheck,
  authorization: string | undefined,
  address: string | undefined,
): Promise<Caller> {
  try {
    return await verifyUnderLimits(check.authenticator, check.authLimiter, authorization, address);
  } catch (error) {
    countAuthFailure(check.metrics, error);
    throw error;
  }
}

/** Counts a refused credential by its reason (and never by the credential). */
export function countAuthFailure(metrics: Pick<GatewayMetrics, "authFailures">, error: unknown): void {
  metrics.authFailures.inc({ reason: authFailureReason(error) });
}

async function verifyUnderLimits(
  authenticator: BearerAuthenticator,
  limiter: FailedAuthLimiter,
  authorization: string | undefined,
  address: string | undefined,
): Promise<Caller> {
  const addressSource = address ? `addr:${address}` : undefined;
  const credentialSource = authorization ? `cred:${credentialFingerprint(authorization)}` : undefined;
  if (credentialSource) {
    const verdict = limiter.check(credentialSource);
    if (verdict.limited) throw rateLimited(verdict.retryAfterSeconds);
  }
  const addressVerdict = addressSource ? limiter.check(addressSource) : undefined;
  try {
    return await authenticator.authenticate(authorization);
  } catch (error) {
    // An introspection endpoint that is down says nothing about the credential: not a failed
    // attempt, or every client would be locked out for a window after the endpoint recovers.
    if (error instanceof SandpoolError && error.code === "auth.introspection_unavailable") throw error;
    for (const source of [addressSource, credentialSource]) if (source) limiter.recordFailure(source);
    if (addressVerdict?.limited) throw rateLimited(addressVerdict.retryAfterSeconds);
    throw error;
  }
}
