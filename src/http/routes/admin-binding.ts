/**
 * Binds the admin operations to the admin sub-app, until the request pipeline's generic
 * binder takes over: a route per operation the registry declares and a handler serves
 * (src/admin/), parsing its path parameters, query and JSON body with the operation's own
 * schemas into CallArgs, and rendering the handler's Outcome; then 405 with `Allow` for a
 * wrong method on an admin path. A query or path problem is the schema's own sentence (it
 * names the parameter); a body problem is `field: what is wrong`, as contract bodies are.
 */
import type { Context, Hono, MiddlewareHandler } from "hono";
import { z } from "zod";
import type { $ZodType } from "zod/v4/core";
import { malformed, SandpoolError } from "../../contract/error-codes.js";
import { issueProblems, type SchemaIssues } from "../../contract/schemas.js";
import type { CallArgs, OperationHandlers, Outcome } from "../../operations/handler.js";
import type { OperationSpec } from "../../operations/operation.js";
import { honoPath, operations } from "../../operations/registry.js";
import { jsonBodyLimit, readJsonBody } from "../common/read-json-body.js";
import type { AdminEnv } from "./admin-routes.js";

export function bindAdminOperations(
  app: Hono<AdminEnv>,
  handlers: OperationHandlers,
  maxJsonBodyBytes: number,
): void {
  const jsonLimit = jsonBodyLimit(maxJsonBodyBytes);
  const served = operations.all("admin").filter((operation) => handlers[operation.id] !== undefined);
  for (const operation of served) {
    const handler = handlers[operation.id]!;
    // The size cap before anything reads a body (413 on Content-Length, or as a chunked body arrives).
    const capped: MiddlewareHandler<AdminEnv> = operation.body ? jsonLimit : (_c, next) => next();
    app.on(operation.method, honoPath(operation.path), named(operation), capped, async (c) => {
      const outcome = await handler({
        operation,
        caller: c.get("caller"),
        args: await admittedArgs(c, operation),
        requestId: c.get("requestId"),
        log: c.get("log"),
        signal: c.req.raw.signal,
      });
      return render(c, outcome);
    });
  }
  for (const path of new Set(served.map((operation) => operation.path))) {
    const allow = served.filter((operation) => operation.path === path).map((operation) => operation.method);
    app.all(honoPath(path), (c) => {
      throw new SandpoolError("request.method_not_allowed", `${c.req.method} is not allowed here`, {
        headers: { Allow: allow.join(", ") },
      });
    });
  }
}

/** The operation's label names the request in metrics and logs, refused or not. */
function named(operation: OperationSpec): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    c.set("operation", operation.label);
    c.set("operationId", operation.id);
    await next();
  };
}

/** Path parameters, then query, then body, each checked by its schema (422 listing every problem). */
async function admittedArgs(c: Context<AdminEnv>, operation: OperationSpec): Promise<CallArgs> {
  const sentences = (error: SchemaIssues) => error.issues.map((issue) => issue.message);
  return {
    params: admit(operation.params, c.req.param(), sentences) as Record<string, string>,
    query: admit(operation.query, c.req.query(), sentences) as Record<string, string>,
    body: operation.body ? admit(operation.body, await readJsonBody(c), issueProblems) : undefined,
  };
}

function admit(
  schema: $ZodType | undefined,
  value: unknown,
  problems: (error: SchemaIssues) => string[],
): unknown {
  if (!schema) return {};
  const parsed = z.safeParse(schema, value);
  if (!parsed.success) throw malformed(problems(parsed.error));
  return parsed.data;
}

function render(c: Context<AdminEnv>, outcome: Outcome): Response {
  for (const [name, value] of Object.entries(outcome.headers ?? {})) c.header(name, value);
  switch (outcome.kind) {
    case "json":
      return c.json(outcome.body, outcome.status as 200);
    case "empty":
      return c.body(null, outcome.status as 204);
    case "raw":
      return c.body(outcome.body as string, outcome.status as 200);
  }
}
