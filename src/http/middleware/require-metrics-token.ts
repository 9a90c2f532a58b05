/**
 * `/metrics` behind its bearer token (`metrics.token`), as a middleware on that path alone:
 * 401 without it (the error handler adds `WWW-Authenticate`), and once it is accepted the
 * request leaves the bound on unauthenticated requests, as an authenticated API call does.
 * A token of the API (a JWT, an API key) is not this token: metrics are for the scraper.
 */
import type { MiddlewareHandler } from "hono";
import { AuthRefusal } from "../../auth/auth-refusal.js";
import type { MetricsToken } from "../../service-operations/metrics-token.js";
import { requestHeader } from "../common/request-header.js";
import { passedAuthentication } from "./unauthenticated-gate.js";

export function requireMetricsToken(token: MetricsToken): MiddlewareHandler {
  return async (c, next) => {
    const authorization = requestHeader(c, "authorization");
    if (!token.accepts(authorization)) {
      throw new AuthRefusal(authorization ? "other" : "missing", "not the metrics token");
    }
    passedAuthentication(c);
    await next();
  };
}
