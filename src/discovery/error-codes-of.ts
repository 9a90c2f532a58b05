/**
 * The error codes an operation may answer with, for its OpenAPI responses: the pipeline's
 * steps (docs/architecture.md, "The pipeline") in the order they may refuse a call.
 * Documentation only: the codes themselves and their statuses are src/contract/error-codes.ts.
 */
import type { ErrorCode } from "../contract/error-codes.js";
import type { OperationSpec } from "../operations/operation.js";

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
const jsonBody: ErrorCode[] = [
  "request.bad_json",
  "request.bad_content_type",
  "request.too_large",
  "request.malformed",
];
/** A call forwarded to the session's sandbox. */
const forwarded: ErrorCode[] = [
  "session.not_found",
  "sandbox.unreachable",
  "sandbox.timeout",
  "sandbox.bad_answer",
];

const contractOnly: Record<string, ErrorCode[]> = {
  "sessions.create": [
    ...jsonBody,
    "policy.image_not_allowed",
    "policy.isolation_required",
    "policy.egress_not_allowed",
    "policy.secret_not_allowed",
    "quota.concurrent_sessions",
    "quota.session_rate",
    "capacity.exhausted",
  ],
  "sessions.get": ["session.not_found"],
  "sessions.delete": ["session.not_found", "sandbox.unreachable", "sandbox.timeout"],
  "sessions.exec": [
    ...jsonBody,
    ...forwarded,
    "tool.unknown",
    "policy.tool_not_allowed",
    "quota.exec_budget",
  ],
  "files.list": [...forwarded, "path.invalid", "path.outside_workspace", "file.not_found"],
  "files.get": [
    ...forwarded,
    "path.invalid",
    "path.outside_workspace",
    "file.not_found",
    "file.is_directory",
  ],
  "files.put": [
    ...forwarded,
    "request.bad_content_type",
    "request.too_large",
    "request.malformed",
    "path.invalid",
    "path.outside_workspace",
    "file.too_large",
  ],
};

/** What admin operations on one session may answer beyond any admin operation's codes. */
const adminOnly: Record<string, ErrorCode[]> = {
  "admin.sessions.end": ["session.not_found"],
  "admin.sessions.hibernate": [
    "session.not_found",
    "session.busy",
    "session.not_hibernatable",
    "quota.hibernated_sessions",
    "capacity.checkpoint_space",
  ],
  // A restore that fails keeps the checkpoint and answers 503 with Retry-After; a session that
  // expired while hibernated is ended on the way and answers as unknown.
  "admin.sessions.resume": ["session.not_found", "session.resume_failed"],
};

export function errorCodesOf(operation: OperationSpec): ErrorCode[] {
  switch (operation.group) {
    case "service":
      if (operation.id === "service.openapi")
        return [
          ...transport,
          "auth.invalid",
          "auth.expired",
          "auth.rate_limited",
          "auth.introspection_unavailable",
        ];
      if (operation.id === "service.docs.asset") return [...transport, "request.not_found"];
      return transport;
    case "admin":
      return unique([
        ...transport,
        ...authentication,
        "auth.forbidden",
        "request.not_found",
        "store.unavailable",
        // Path and query parameters are checked (422) too; a body only where one is sent.
        ...(operation.body || takesBody(operation) ? jsonBody : ["request.malformed" as const]),
        ...(adminOnly[operation.id] ?? []),
        ...(operation.id.startsWith("admin.secrets.") ? ["secrets.not_configured" as const] : []),
      ]);
    case "contract":
      return unique([
        ...transport,
        ...authentication,
        "request.not_found",
        "policy.workspace_disabled",
        "quota.calls_in_flight",
        "store.unavailable",
        ...(contractOnly[operation.id] ?? []),
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
