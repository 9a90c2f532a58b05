/**
 * The error codes an operation may answer with, for its OpenAPI responses: the pipeline's
 * steps (docs/architecture.md, "The pipeline") in the order they may refuse a call, then the
 * operation's own, which its spec lists (`errors`; a test holds them to what its handler
 * throws). Documentation only: the codes themselves and their statuses are
 * src/contract/error-codes.ts.
 */
import type { ErrorCode } from "../contract/error-codes.js";
import type { OperationSpec } from "../operations/operation.js";
import { jsonBodyCodes } from "../operations/step-error-codes.js";

/** Transport and host checks, and the bound on unauthenticated requests: any request. */
const transport: ErrorCode[] = [
  "request.bad_target",
  "request.host_denied",
  "request.origin_denied",
  "request.busy",
  "server.internal",
];
const authentication: ErrorCode[] = [
  "auth.missing",
  "auth.invalid",
  "auth.expired",
  "auth.rate_limited",
  "auth.introspection_unavailable",
];

export function errorCodesOf(operation: OperationSpec): ErrorCode[] {
  const own = operation.errors ?? [];
  switch (operation.group) {
    case "service":
      return unique([...transport, ...own]);
    case "admin":
      return unique([
        ...transport,
        ...authentication,
        "auth.forbidden",
        "request.not_found",
        "store.unavailable",
        // Path and query parameters are checked (422) too; a body only where one is sent.
        ...(operation.body || takesBody(operation) ? jsonBodyCodes : ["request.malformed" as const]),
        ...own,
      ]);
    case "contract":
      return unique([
        ...transport,
        ...authentication,
        "request.not_found",
        "policy.workspace_disabled",
        "quota.calls_in_flight",
        "store.unavailable",
        ...own,
      ]);
  }
}

/** PUT, PATCH and POST admin operations read a JSON body, declared or not yet. */
function takesBody(operation: OperationSpec): boolean {
  return operation.method === "PUT" || operation.method === "PATCH" || operation.method === "POST";
}

function unique(codes: ErrorCode[]): ErrorCode[] {
  return [...new Set(codes)];
}
