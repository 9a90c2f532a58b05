/**
 * Pipeline step 2: every contract route requires a valid bearer credential, checked
 * before any route lookup, so a caller without one learns nothing (no 404 or 405 first).
 * Repeated failures from one address, or with one credential, are refused with 429
 * before any verification work is spent on them.
 */
import type { MiddlewareHandler } from "hono";
import type { FailedAuthLimiter } from "../../auth/failed-auth-limiter.js";
import { failedAuthSources } from "../../auth/failed-auth-limiter.js";
import type { Principal } from "../../auth/principal.js";
import { SandpoolError } from "../../contract/error-codes.js";
import type { GatewayEnv } from "../gateway-env.js";

export interface BearerAuthenticator {
  authenticate(authorization: string | undefined): Promise<Principal>;
}

export function authenticate(
  authenticator: BearerAuthenticator,
  limiter: FailedAuthLimiter,
): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const authorization = c.req.header("authorization");
    const sources = failedAuthSources(c.env?.incoming?.socket?.remoteAddress, authorization);
    for (const source of sources) {
      const verdict = limiter.check(source);
      if (verdict.limited) {
        throw new SandpoolError("auth.rate_limited", "too many failed authentication attempts", {
          retryAfterSeconds: verdict.retryAfterSeconds,
        });
      }
    }
    try {
      c.set("principal", await authenticator.authenticate(authorization));
    } catch (error) {
      for (const source of sources) limiter.recordFailure(source);
      throw error;
    }
    c.header("WWW-Authenticate", undefined);
    await next();
  };
}
