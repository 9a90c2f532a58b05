/**
 * The admin API (policy edits among the rest: docs/architecture.md, "Policy"), served at
 * `/admin/v1`, beside the contract and never under its base path. Every request needs a valid
 * bearer token (401 first, as on contract routes, so an anonymous caller learns nothing) and
 * then an admin token (403 `auth.forbidden`). Its routes are the admin operations of the
 * registry (src/operations/admin-operations.ts: paths, shapes), bound to their handlers
 * (src/admin/) through the request pipeline (src/http/bind-operations.ts); a wrong method on
 * an admin path is 405 with `Allow`, and any other path under /admin/v1 is 404. Errors are the
 * usual { detail: { code, message } }; a refused input adds `problems: string[]`.
 */
import type { HttpBindings } from "@hono/node-server";
import { Hono, type MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import { adminHandlers } from "../../admin/admin-handlers.js";
import type { Caller } from "../../auth/principal.js";
import { SandpoolError } from "../../contract/error-codes.js";
import type { PipelineDeps } from "../../pipeline/pipeline.js";
import type { PolicyAdmin } from "../../policy/policy-admin.js";
import { bindOperations } from "../bind-operations.js";
import { requestHeader } from "../common/request-header.js";
import type { GatewayServices } from "../gateway-services.js";
import { countAuthFailure, verifyBearer } from "../middleware/bearer-authentication.js";
import { passedAuthentication } from "../middleware/unauthenticated-gate.js";

export const ADMIN_BASE_PATH = "/admin/v1";

/** The request variables of the admin API: the contract's, with a caller that may lack a workspace. */
export interface AdminEnv {
  Bindings: HttpBindings;
  Variables: {
    requestId: string;
    log: Logger;
    /** The operation's label, the `route` metric label. */
    operation: string;
    /** The admin operation's id (`admin.policy.put`), once the call matched one. */
    operationId?: string;
    caller: Caller;
  };
}

export function createAdminApp(services: GatewayServices, policyAdmin: PolicyAdmin): Hono<AdminEnv> {
  const admin = new Hono<AdminEnv>();
  admin.use("*", requireAdmin(services));
  // Through the request pipeline, as every operation (the mounted step checks the admin token again).
  bindOperations(admin, "admin", adminHandlers(services, policyAdmin), pipelineOf(services), {
    maxJsonBytes: services.limits.maxJsonBodyBytes,
    methodNotAllowed: true,
  });
  // Nothing under /admin/v1 falls through to the contract routes (which would ask for a workspace).
  admin.all("*", () => {
    throw new SandpoolError("request.not_found", "no such admin route");
  });
  return admin;
}

/** The pipeline's dependencies for admin operations: authentication; no session layer, no refusal audit. */
function pipelineOf(services: GatewayServices): PipelineDeps {
  return { check: services, usage: services.usage };
}

/** 401 without a valid token (counted like any failed attempt), then 403 unless it is an admin token. */
function requireAdmin(services: GatewayServices): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const caller = await verifyBearer(
      services,
      requestHeader(c, "authorization"),
      c.env?.incoming?.socket?.remoteAddress,
    );
    if (caller.admin !== true) {
      const refusal = new SandpoolError("auth.forbidden", "the admin API needs an admin token");
      countAuthFailure(services.metrics, refusal);
      throw refusal;
    }
    c.set("caller", caller);
    passedAuthentication(c);
    await next();
  };
}
