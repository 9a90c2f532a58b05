/**
 * Turns any thrown value into a contract `Error` response. Expected failures carry their
 * code and message; anything else is a 500 whose message stays in the log, keyed by the
 * request id, and never reaches the caller.
 */
import type { Context } from "hono";
import type { Logger } from "pino";
import { errorBody, SandpoolError } from "../../contract/error-codes.js";

export function errorResponse(c: Context, error: unknown, log: Logger): Response {
  if (error instanceof SandpoolError) {
    if (error.retryAfterSeconds !== undefined) c.header("Retry-After", String(error.retryAfterSeconds));
    for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
    // RFC 9110: a 401 names its scheme. One value for every cause: the reason stays hidden.
    if (error.status === 401) c.header("WWW-Authenticate", 'Bearer realm="sandpool"');
    return c.json(error.toBody(), error.status);
  }
  log.error({ err: error, method: c.req.method, path: c.req.path }, "unexpected error");
  return c.json(errorBody("server.internal", "internal error"), 500);
}
