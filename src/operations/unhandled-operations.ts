/**
 * The operations of a group that a handler map leaves out. The route table binds only what has
 * a handler (a test may bind a few), so a gateway that forgot one would answer its path as an
 * unknown route; the composition root refuses to start instead (assertEveryOperationHandled).
 */
import type { OperationHandlers } from "./handler.js";
import type { OperationGroup } from "./operation.js";
import { type OperationRegistry, operations } from "./registry.js";

export function unhandledOperations(
  group: OperationGroup,
  handlers: OperationHandlers,
  registry: OperationRegistry = operations,
): string[] {
  return registry
    .all(group)
    .filter((operation) => handlers[operation.id] === undefined)
    .map((operation) => `${operation.id} (${operation.method} ${operation.path})`);
}

/** Throws, naming each, when a group's declared operations lack a handler. */
export function assertEveryOperationHandled(
  groups: Partial<Record<OperationGroup, OperationHandlers>>,
  registry: OperationRegistry = operations,
): void {
  const missing = Object.entries(groups).flatMap(([group, handlers]) =>
    handlers ? unhandledOperations(group as OperationGroup, handlers, registry) : [],
  );
  if (missing.length > 0)
    throw new Error(`operations declared in the registry without a handler: ${missing.join(", ")}`);
}
