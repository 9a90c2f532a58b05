/**
 * The contract's operations (contract v1, `src/contract/code-execution-openapi.yaml`),
 * mounted for workspace tokens at `/` and under the configured base path. Their shapes in the
 * OpenAPI document are the contract's own, unchanged (the drift test holds them to it). Each
 * declares its session plan here too (session-plan.ts): its policy rules and how it touches
 * its session, which the pipeline enforces and explain reports.
 */
import * as z from "zod/mini";
import { parseExecBody } from "../contract/parse-exec-request.js";
import { type CreateSessionRequest, createSessionRequest, type ExecRequest } from "../contract/schemas.js";
import { fileSizeAllowed, imageAllowed, toolAllowed } from "../policy/decide-access.js";
import type { OperationSpec } from "./operation.js";
import {
  execReserve,
  type PolicyRule,
  type SessionPlanLimits,
  TRANSFER_DEADLINE_MS,
} from "./session-plan.js";
import { forwardedCodes, jsonBodyCodes } from "./step-error-codes.js";
import type { SpecOf } from "./typed-handlers.js";

const contract = { group: "contract", mountedFor: "workspace" } as const;

/** The query of a file operation: the file or folder (`path`), sent on to the sandbox with the rest. */
const fileQuery = z.looseObject({ path: z.optional(z.string()) });

/** A new session's image (the default when none is asked) is one the workspace allows (403 `policy.image_not_allowed`). */
const imageRule: PolicyRule<{ body: CreateSessionRequest }> = {
  decide: (policy, args) => imageAllowed(policy, args.body.image),
};

/** An Execute's tool is one the workspace allows (403 `policy.tool_not_allowed`). */
const toolRule: PolicyRule<{ body: ExecRequest }> = {
  decide: (policy, args) => toolAllowed(policy, args.body.tool),
  readsBody: { rule: "tool.allowed", skipped: "no valid tool to check" },
};

/** An upload within the file-size cap, checked on Content-Length before anything is read (413); the sandbox enforces it exactly. */
const fileSizeRule: PolicyRule = {
  decide: (policy, args) => fileSizeAllowed(policy, args.stream?.contentLength),
};

const transfer = () => TRANSFER_DEADLINE_MS;

export const contractOperations = [
  {
    ...contract,
    id: "sessions.create",
    summary: "Lease a session: a pre-warmed sandbox under the workspace's policy.",
    method: "POST",
    path: "/sessions",
    label: "CreateSession",
    effects: ["write"],
    input: "optional-json",
    body: createSessionRequest,
    answers: ["json"],
    success: 201,
    errors: [
      ...jsonBodyCodes,
      "policy.image_not_allowed",
      "policy.isolation_required",
      "policy.egress_not_allowed",
      "policy.secret_not_allowed",
      "quota.concurrent_sessions",
      "quota.session_rate",
      "capacity.exhausted",
    ],
    // Policy at the gate, as every call: the workspace enabled, the image allowed; the pool
    // serving it, admission and the lease are the handler's (SessionLifecycle.create).
    session: { admits: "none", gated: true, rules: [imageRule] },
  },
  {
    ...contract,
    id: "sessions.get",
    summary: "A session's handle, with the values in force.",
    method: "GET",
    path: "/sessions/{id}",
    label: "GetSession",
    effects: ["read"],
    answers: ["json"],
    success: 200,
    errors: ["session.not_found"],
    session: {
      admits: "resolve",
      gated: false,
      ungated: "GetSession reads the handle: a disabled workspace may still read it",
    },
  },
  {
    ...contract,
    id: "sessions.delete",
    summary: "End a session and destroy its sandbox.",
    method: "DELETE",
    path: "/sessions/{id}",
    label: "DestroySession",
    effects: ["write"],
    answers: ["empty"],
    success: 204,
    errors: ["session.not_found", "sandbox.unreachable", "sandbox.timeout"],
    session: {
      admits: "none",
      gated: false,
      ungated: "DestroySession ends the session: a disabled workspace may still end it",
    },
  },
  {
    ...contract,
    id: "sessions.exec",
    summary: "Run a tool call in the session (Python, bash, text editor).",
    method: "POST",
    path: "/sessions/{id}/exec",
    label: "Execute",
    effects: ["exec"],
    input: "json",
    parseBody: parseExecBody,
    answers: ["json", "event-stream"],
    success: 200,
    errors: [
      ...jsonBodyCodes,
      ...forwardedCodes,
      "tool.unknown",
      "policy.tool_not_allowed",
      "quota.exec_budget",
    ],
    session: {
      admits: "call",
      gated: true,
      rules: [toolRule],
      reserves: execReserve,
      // Busy until the longest the call may take (the time granted can only shorten it).
      busyMs: (limits: SessionPlanLimits, reservedMs: number | undefined) =>
        (reservedMs ?? 0) + limits.execDeadlineBufferMs,
    },
  },
  {
    ...contract,
    id: "files.list",
    summary: "List the session's files.",
    method: "GET",
    path: "/sessions/{id}/files/list",
    label: "ListFiles",
    effects: ["read"],
    query: fileQuery,
    answers: ["json"],
    success: 200,
    errors: [...forwardedCodes, "path.invalid", "path.outside_workspace", "file.not_found"],
    session: {
      admits: "call",
      gated: true,
      busyMs: (limits: SessionPlanLimits) => limits.sandboxRequestTimeoutMs,
    },
  },
  {
    ...contract,
    id: "files.get",
    summary: "Download a file of the session.",
    method: "GET",
    path: "/sessions/{id}/files",
    label: "GetFile",
    effects: ["read"],
    query: fileQuery,
    answers: ["bytes"],
    success: 200,
    errors: [
      ...forwardedCodes,
      "path.invalid",
      "path.outside_workspace",
      "file.not_found",
      "file.is_directory",
    ],
    session: { admits: "call", gated: true, busyMs: transfer },
  },
  {
    ...contract,
    id: "files.put",
    summary: "Upload a file into the session (multipart).",
    method: "POST",
    path: "/sessions/{id}/files",
    label: "PutFile",
    effects: ["write"],
    input: "stream",
    answers: ["json"],
    success: 201,
    errors: [
      ...forwardedCodes,
      "request.bad_content_type",
      "request.too_large",
      "request.malformed",
      "path.invalid",
      "path.outside_workspace",
      "file.too_large",
    ],
    session: { admits: "call", gated: true, rules: [fileSizeRule], busyMs: transfer },
  },
] as const satisfies readonly OperationSpec[];

/** The spec of a contract operation, by id, with its types. */
export type ContractOperation<Id extends (typeof contractOperations)[number]["id"]> = SpecOf<
  typeof contractOperations,
  Id
>;
