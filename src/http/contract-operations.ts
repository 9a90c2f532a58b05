/**
 * The contract's operations, declared once: their ids (as audit records and explain name
 * them), the label their metrics carry, and their HTTP binding. The gateway names each call's
 * operation from this table before any admission step runs, so a refusal by a middleware (calls
 * in flight) is attributed like one by a handler; the 405 answer's `Allow` comes from it too.
 */
import type { Hono, MiddlewareHandler } from "hono";
import type { GatewayEnv } from "./gateway-env.js";

export interface ContractOperation {
  id: string;
  /** The `route` label of the request metrics. */
  label: string;
  method: "GET" | "POST" | "DELETE";
  /** A Hono route pattern, relative to where the contract is mounted. */
  path: string;
}

export const contractOperations: readonly ContractOperation[] = [
  { id: "sessions.create", label: "CreateSession", method: "POST", path: "/sessions" },
  { id: "sessions.get", label: "GetSession", method: "GET", path: "/sessions/:id" },
  { id: "sessions.delete", label: "DestroySession", method: "DELETE", path: "/sessions/:id" },
  { id: "sessions.exec", label: "Execute", method: "POST", path: "/sessions/:id/exec" },
  { id: "files.list", label: "ListFiles", method: "GET", path: "/sessions/:id/files/list" },
  { id: "files.get", label: "GetFile", method: "GET", path: "/sessions/:id/files" },
  { id: "files.put", label: "PutFile", method: "POST", path: "/sessions/:id/files" },
];

/** Names the operation of every call that matches one, before the steps that may refuse it. */
export function nameContractOperations(app: Hono<GatewayEnv>): void {
  for (const operation of contractOperations) {
    const name: MiddlewareHandler<GatewayEnv> = async (c, next) => {
      c.set("operation", operation.label);
      c.set("operationId", operation.id);
      await next();
    };
    app.on(operation.method, operation.path, name);
  }
}

/** A contract path and the methods it answers (`GET, DELETE`), for 405 answers. */
export const contractPaths: readonly (readonly [RegExp, string])[] = (() => {
  const methods = new Map<string, string[]>();
  for (const { path, method } of contractOperations)
    methods.set(path, [...(methods.get(path) ?? []), method]);
  return [...methods].map(([path, allowed]) => [
    new RegExp(`^${path.replace(/:[a-z]+/g, "[^/]+")}$`),
    allowed.join(", "),
  ]);
})();
