/**
 * Binds an operation's handler (src/operations/handler.ts) on a Hono app at the method and
 * path the registry declares for it: the admitted arguments in (path and query parameters,
 * the JSON body of a method that takes one), the outcome rendered out. The handler never
 * sees HTTP; its refusals (SandpoolError) go to the app's error handler like any route's.
 */
import type { Context, Env, Hono, MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import type { Caller } from "../../auth/principal.js";
import type { CallArgs, OperationHandler, Outcome } from "../../operations/handler.js";
import type { OperationSpec } from "../../operations/operation.js";
import { honoPath } from "../../operations/registry.js";
import { readJsonBody } from "./read-json-body.js";

/** What the app's middleware has set by the time an operation runs: authenticated, with a request id and logger. */
type OperationEnv = Env & {
  Variables: { requestId: string; log: Logger; operation: string; caller: Caller };
};

const TAKES_BODY = new Set(["POST", "PUT", "PATCH"]);

export function bindOperation<E extends OperationEnv>(
  app: Hono<E>,
  operation: OperationSpec,
  handler: OperationHandler,
  ...middleware: MiddlewareHandler<E>[]
): void {
  app.on(operation.method, [honoPath(operation.path)], ...middleware, async (c: Context<E>) => {
    c.set("operation", operation.label);
    const args: CallArgs = {
      params: c.req.param() as Record<string, string>,
      query: c.req.query(),
      ...(TAKES_BODY.has(operation.method) ? { body: await readJsonBody(c, { optional: true }) } : {}),
    };
    const outcome = await handler({
      operation,
      caller: c.get("caller"),
      args,
      requestId: c.get("requestId"),
      log: c.get("log"),
      signal: c.req.raw.signal,
    });
    return render(c, outcome);
  });
}

function render(c: Context, outcome: Outcome): Response {
  switch (outcome.kind) {
    case "json":
      return c.json(outcome.body as object, outcome.status as 200, outcome.headers);
    case "raw":
      return new Response(outcome.body as ConstructorParameters<typeof Response>[0], {
        status: outcome.status,
        headers: outcome.headers,
      });
    case "empty":
      return c.body(null, outcome.status as 204, outcome.headers);
  }
}
