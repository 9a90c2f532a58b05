/**
 * Pipeline step "route": an operation id to its declaration, for a call made in process.
 * Over HTTP the route table (generated from the same registry, src/http/bind-operations.ts)
 * has already matched method and path to the operation.
 */
import { SandpoolError } from "../../contract/error-codes.js";
import type { OperationSpec } from "../../operations/operation.js";
import { type OperationRegistry, operations } from "../../operations/registry.js";

export function routeById(operationId: string, registry: OperationRegistry = operations): OperationSpec {
  const operation = registry.get(operationId);
  if (!operation) throw new SandpoolError("request.not_found", `no operation '${operationId}'`);
  return operation;
}
