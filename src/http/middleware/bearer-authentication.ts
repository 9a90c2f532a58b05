/**
 * Pipeline steps authenticate and mounted, run by the transport ahead of the route lookup:
 * every contract route requires a valid bearer credential (src/auth/verify-bearer.ts), so a
 * caller without one learns nothing (no 404 or 405 first), and a token that names a
 * workspace (an admin token scoped to none is refused 401, failing closed:
 * src/pipeline/steps/mounted.ts), unknown routes included. The admin API's routes need an
 * admin token the same way (403 `auth.forbidden` for any other valid token).
 */
import type { HttpBindings } from "@hono/node-server";
import type { Context, MiddlewareHandler } from "hono";
import type { Caller, Principal } from "../../auth/principal.js";
import { type BearerCheck, verifyBearer } from "../../auth/verify-bearer.js";
import type { Audience } from "../../operations/operation.js";
import { mountedCaller } from "../../pipeline/steps/mounted.js";
import { requestHeader } from "../common/request-header.js";
import type { GatewayEnv } from "../gateway-env.js";
import { passedAuthentication } from "./unauthenticated-gate.js";

/**
 * The request's bearer credential, verified and mounted for `audience`: the caller, once it
 * leaves the bound on unauthenticated requests. A valid token refused by the mounted step is
 * not a failed attempt: it is just not for these routes.
 */
export async function verifiedCaller<E extends { Bindings: HttpBindings }>(
  check: BearerCheck,
  audience: Exclude<Audience, "anyone">,
  c: Context<E>,
): Promise<Caller> {
  const caller = await verifyBearer(
    check,
    requestHeader(c, "authorization"),
    c.env?.incoming?.socket?.remoteAddress,
  );
  const mounted = mountedCaller(audience, caller, check.metrics)!;
  passedAuthentication(c);
  return mounted;
}

export function authenticate(check: BearerCheck): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    c.set("principal", (await verifiedCaller(check, "workspace", c)) as Principal);
    await next();
  };
}
