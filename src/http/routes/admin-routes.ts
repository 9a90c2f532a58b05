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
import type { Caller } from "../../auth/principal.js";
import type { BearerCheck } from "../../auth/verify-bearer.js";
import { SandpoolError } from "../../contract/error-codes.js";
import type { OperationHandlers } from "../../operations/handler.js";
import type { PipelineDeps } from "../../pipeline/pipeline.js";
import { bindOperations } from "../bind-operations.js";
import { verifiedCaller } from "../middleware/bearer-authentication.js";

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

export function createAdminApp(
  check: BearerCheck,
  pipeline: PipelineDeps,
  handlers: OperationHandlers,
  maxJsonBytes: number,
): Hono<AdminEnv> {
  const admin = new Hono<AdminEnv>();
  admin.use("*", requireAdmin(check));
  // Through the request pipeline, as every operation (the mounted step checks the admin token again).
  bindOperations(admin, "admin", handlers, pipeline, {
    maxJsonBytes,
    methodNotAllowed: true,
  });
  // Nothing under /admin/v1 falls through to the contract routes (which would ask for a workspace).
  admin.all("*", () => {
    throw new SandpoolError("request.not_found", "no such admin route");
  });
  return admin;
}

/** 401 without a valid token (counted like any failed attempt), then 403 unless it is an admin token. */
function requireAdmin(check: BearerCheck): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    c.set("caller", await verifiedCaller(check, "admin", c));
    await next();
  };
}
