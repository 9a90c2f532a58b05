/**
 * An operation: one capability of the gateway, declared once (docs/architecture.md,
 * "The operation registry"). Its declaration is data: the route table, 405 `Allow`, the
 * OpenAPI document, the docs page, metrics labels, audit records, explain and the
 * per-operation tests all read it. Nothing here imports Hono or a service, so the CLI and the
 * OpenAPI generator can load the registry offline.
 */
import type { $ZodType } from "zod/v4/core";
import type { ErrorCode } from "../contract/error-codes.js";
import type { SessionPlan } from "./session-plan.js";

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** Which part of the gateway serves it: the contract (under the base path), the admin API, or the service endpoints. */
export type OperationGroup = "contract" | "admin" | "service";

/**
 * Who the operation is mounted for (the pipeline's mounted step): a workspace token
 * (contract), an admin token (admin API), or anyone, without a credential (health, metrics,
 * docs).
 */
export type Audience = "workspace" | "admin" | "anyone";

/** What calling it does, for discovery and explain. */
export type Effect = "read" | "write" | "exec" | "admin";

/**
 * How it answers. An operation may answer in more than one way (Execute: JSON, or an event
 * stream when the caller accepts `text/event-stream`): a property of the operation, not a
 * special case of a route.
 */
export type AnswerKind = "json" | "bytes" | "event-stream" | "text" | "empty";

/**
 * Generic over its schemas, so that a handler declared for it (typed-handlers.ts) reads its
 * arguments and writes its answer in the types the schemas give: one source for each shape.
 */
export interface OperationSpec<
  Params extends $ZodType = $ZodType,
  Query extends $ZodType = $ZodType,
  Body extends $ZodType = $ZodType,
  Result extends $ZodType = $ZodType,
> {
  /** Dotted id: `sessions.exec`, `admin.policy.put`, `service.healthz`. */
  id: string;
  group: OperationGroup;
  summary: string;
  method: HttpMethod;
  /**
   * OpenAPI-style path (`/sessions/{id}`), relative to where its group is mounted: the
   * contract at `/` and its base path, the admin API at `/admin/v1`, the service endpoints at `/`.
   */
  path: string;
  /** The `route` label of the request metrics (kept stable across releases: dashboards use it). */
  label: string;
  mountedFor: Audience;
  /**
   * For an operation open to anyone: "optional" when a credential sent with it is verified
   * (401 when bad) and decides its answer (`/openapi.json` shows an admin everything).
   */
  credential?: "optional";
  effects: readonly Effect[];
  /** Its answer kinds; the first is the default. */
  answers: readonly AnswerKind[];
  /** The status of a successful answer. */
  success: number;
  /** Another status a successful answer may have, with the same body (a PUT that creates: 201). */
  alsoSuccess?: number;
  /** Schema of the path parameters, when the path has any. */
  params?: Params;
  /** Schema of the query string, when the operation reads one. */
  query?: Query;
  /** Schema of a JSON request body, when it takes one. */
  body?: Body;
  /**
   * How the request body is taken (the pipeline's args step): JSON (an empty body refused, or
   * read as `{}` when optional), or a byte stream handed on unread (a multipart upload).
   * Absent: no body is read.
   */
  input?: "json" | "optional-json" | "stream";
  /**
   * Checks a JSON body with the contract's own codes where a schema alone cannot say them
   * (Execute: 400 for an unknown tool kind, 422 for a malformed input); it returns the body
   * the handler gets. Without it, `body` is checked (422 `request.malformed`, every problem).
   */
  parseBody?: (body: unknown) => unknown;
  /** Schema of a JSON answer, for the OpenAPI document. */
  result?: Result;
  /**
   * The codes it may refuse a call with beyond those every operation of its group may (the
   * transport's, authentication's: src/discovery/error-codes-of.ts adds those): what its
   * declaration makes the pipeline check, and what its handler throws. The OpenAPI document
   * lists both; a test (test/unit/operations/handler-error-codes.test.ts) fails when a
   * handler throws a code not listed here.
   */
  errors?: readonly ErrorCode[];
  /** A contract operation's session plan: its policy gate and rules, and how it touches its session. */
  session?: SessionPlan;
}

/** The full path of an operation as a client addresses it, `basePath` aside. */
export function mountedPath(operation: OperationSpec): string {
  return operation.group === "admin" ? `/admin/v1${operation.path}` : operation.path;
}
