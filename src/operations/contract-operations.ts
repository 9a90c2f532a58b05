/**
 * The contract's operations (contract v1, `src/contract/code-execution-openapi.yaml`),
 * mounted for workspace tokens at `/` and under the configured base path. Their shapes in the
 * OpenAPI document are the contract's own, unchanged (the drift test holds them to it).
 */
import * as z from "zod/mini";
import { admitExecBody } from "../contract/parse-exec-request.js";
import { createSessionRequest } from "../contract/schemas.js";
import type { OperationSpec } from "./operation.js";

const contract = { group: "contract", mountedFor: "workspace" } as const;

/** The query of a file operation: the file or folder (`path`), sent on to the sandbox with the rest. */
const fileQuery = z.looseObject({ path: z.optional(z.string()) });

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
    admitBody: admitExecBody,
    answers: ["json", "event-stream"],
    success: 200,
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
  },
] as const satisfies readonly OperationSpec[];
