/**
 * The contract's operations as the Hono app binds them, from the registry
 * (src/operations/): the gateway names each call's operation before any admission step
 * runs, so a refusal by a middleware (calls in flight) is attributed like one by a handler,
 * and audited here, where it is made (the pipeline audits its own); the 405 answer's
 * `Allow` comes from the registry too.
 */
import type { Context, Hono, MiddlewareHandler } from "hono";
import { honoPath, operations } from "../operations/registry.js";
import type { GatewayEnv } from "./gateway-env.js";
import { type CallsInFlight, withinCallsInFlight } from "./middleware/calls-in-flight.js";

/** Audits a call refused by the transport after authentication (calls in flight). */
export type TransportRefusal = (c: Context<GatewayEnv>, refusal: unknown) => void;

/**
 * Names the operation of every call that matches one, then counts it in flight (429 past
 * the workspace's bound, calls-in-flight.ts), before the steps that may refuse it. One
 * middleware per operation for both: every layer costs each call a step of Hono's composition.
 */
export function nameContractOperations(
  app: Hono<GatewayEnv>,
  calls: CallsInFlight,
  refused: TransportRefusal,
): void {
  for (const operation of operations.all("contract")) {
    const name: MiddlewareHandler<GatewayEnv> = (c, next) => {
      c.set("operation", operation.label);
      c.set("operationId", operation.id);
      return withinCallsInFlight(calls, c, next, refused);
    };
    app.on(operation.method, honoPath(operation.path), name);
  }
}

/** A contract path and the methods it answers (`GET, DELETE`), for 405 answers. */
export const contractPaths: readonly (readonly [RegExp, string])[] = [
  ...new Set(operations.all("contract").map((operation) => operation.path)),
].map((path) => [
  new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`),
  operations.allowedMethods("contract", path).join(", "),
]);
