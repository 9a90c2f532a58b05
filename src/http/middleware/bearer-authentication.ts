/**
 * Pipeline steps authenticate and mounted for the contract, run ahead of the route lookup:
 * every contract route requires a valid bearer credential, so a caller without one learns
 * nothing (no 404 or 405 first), and a token that names a workspace (an admin token scoped to
 * none is refused 401, failing closed: src/pipeline/steps/mounted.ts), unknown routes included.
 *
 * Failed attempts are limited per credential and per client address. A credential that
 * keeps failing is refused (429) before any verification work is spent on it. An address
 * that keeps failing gets 429 instead of 401 for its failures, but a valid token from it
 * still passes: behind a shared proxy every tenant has the same address, and one tenant's
 * stale token must not lock the others out.
 */
import type { MiddlewareHandler } from "hono";
import { authFailureReason } from "../../auth/auth-refusal.js";
import { credentialFingerprint, type FailedAuthLimiter } from "../../auth/failed-auth-limiter.js";
import type { BearerAuthenticator, Caller, Principal } from "../../auth/principal.js";
import { SandpoolError } from "../../contract/error-codes.js";
import type { GatewayMetrics } from "../../metering/gateway-metrics.js";
import { mountedCaller } from "../../pipeline/steps/mounted.js";
import { requestHeader } from "../common/request-header.js";
import type { GatewayEnv } from "../gateway-env.js";
import type { GatewayServices } from "../gateway-services.js";
import { passedAuthentication } from "./unauthenticated-gate.js";

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

/** What checking a bearer needs: the gateway's authenticator, its limiter and its metrics. */
export type BearerCheck = Pick<GatewayServices, "authenticator" | "authLimiter" | "metrics">;

/** Counts a refused credential by its reason (and never by the credential). */
export function countAuthFailure(metrics: GatewayMetrics, error: unknown): void {
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

export function authenticate(check: BearerCheck): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const caller = await verifyBearer(
      check,
      requestHeader(c, "authorization"),
      c.env?.incoming?.socket?.remoteAddress,
    );
    // A verified token, so not counted as a failed attempt: it is just not for this route.
    c.set("principal", mountedCaller("workspace", caller, check.metrics) as Principal);
    passedAuthentication(c);
    await next();
  };
}
