/**
 * Requests derived from an operation's declaration (src/operations/): the path a client
 * addresses, a method its path does not answer, an unknown route beside it, and one request
 * sent over HTTP with the right caller. Every answer is checked against the contract: a
 * contract operation's against its own responses, any error answer against the `Error` schema.
 */
import { expect } from "vitest";
import { type HttpMethod, mountedPath, type OperationSpec } from "../../../src/operations/operation.js";
import { operations } from "../../../src/operations/registry.js";
import { assertContractResponse, assertSchema } from "../../support/contract.js";
import type { Answer } from "../../support/contract-client.js";

/** One request of a case: the operation's own method unless it says otherwise. */
export interface CaseRequest {
  method?: HttpMethod;
  /** As a client addresses it (`/admin/v1/...`); `{session}` becomes a live session of the test's workspace. */
  path: string;
  json?: unknown;
  /** Multipart fields; a `file` field is sent as a file part. */
  form?: Record<string, string>;
}

/** Values for the path parameters of the generic checks: well-formed, naming nothing that exists. */
const PARAMETER_VALUES: Record<string, string> = {
  id: "no-such-id",
  ws: "optests-nobody",
  name: "default",
  prefix: "0123456789ab",
  /** A file of the docs page (service.docs.asset). */
  asset: "swagger-ui.css",
};

/** The operation's path with every `{param}` filled in. */
export function concretePath(operation: OperationSpec): string {
  return mountedPath(operation).replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = PARAMETER_VALUES[name];
    if (value === undefined) throw new Error(`no test value for path parameter {${name}} of ${operation.id}`);
    return value;
  });
}

const METHODS: readonly HttpMethod[] = ["PATCH", "PUT", "DELETE", "POST", "GET"];

/** The methods the operation's path answers, from the registry, sorted. */
export function allowedOn(operation: OperationSpec): HttpMethod[] {
  return operations.allowedMethods(operation.group, operation.path).sort();
}

/** A method the operation's path does not answer. */
export function wrongMethodFor(operation: OperationSpec): HttpMethod {
  const allowed = allowedOn(operation);
  const method = METHODS.find((candidate) => !allowed.includes(candidate));
  if (!method) throw new Error(`${operation.path} answers every method`);
  return method;
}

function pattern(operation: OperationSpec): RegExp {
  return new RegExp(`^${mountedPath(operation).replace(/\{[^}]+\}/g, "[^/]+")}$`);
}

/** A path beside the operation's that no operation of any group binds. */
export function unknownRouteNextTo(operation: OperationSpec): string {
  // A path that ends in a slash (`/docs/`) takes no second one: `//` is a malformed target.
  let path = `${concretePath(operation).replace(/\/$/, "")}/no-such-route`;
  while (operations.all().some((any) => pattern(any).test(path))) path += "/deeper";
  return path;
}

/** Where an unknown route of the operation's group lives: the admin API's own catch-all, or the root's. */
export function unknownRouteOfGroup(operation: OperationSpec): string {
  return operation.group === "admin" ? "/admin/v1/no-such-route" : "/no-such-route";
}

export async function send(
  baseUrl: string,
  token: string | undefined,
  request: CaseRequest,
  sessionId = "no-such-session",
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  let body: RequestInit["body"];
  if (request.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(request.json);
  } else if (request.form) {
    const form = new FormData();
    for (const [name, value] of Object.entries(request.form)) {
      if (name === "file") form.set(name, new Blob([value]), "upload.txt");
      else form.set(name, value);
    }
    body = form;
  }
  const path = request.path.replaceAll("{session}", encodeURIComponent(sessionId));
  const res = await fetch(`${baseUrl}${path}`, { method: request.method ?? "GET", headers, body });
  const text = await res.text();
  const json = (res.headers.get("content-type") ?? "").includes("application/json") && text.length > 0;
  return { status: res.status, body: json ? JSON.parse(text) : text, headers: res.headers, text };
}

/** Contract operations sandpool adds to the contract (no operation of the document): their result's schema. */
const EXTENSION_RESULTS: Record<string, string> = { GetSession: "SessionHandle" };

/**
 * Checks an answer to a request addressed to `operation`: a contract operation's answer
 * against the contract's responses of that operation (when the request was the operation
 * itself), every error answer against the contract's `Error` schema.
 */
export function checkAnswer(operation: OperationSpec, answer: Answer, sameOperation: boolean): void {
  const extension = EXTENSION_RESULTS[operation.label];
  if (operation.group === "contract" && sameOperation && extension === undefined) {
    assertContractResponse(operation.label, answer.status, answer.body);
  } else if (operation.group === "contract" && sameOperation && answer.status < 400) {
    assertSchema(extension!, answer.body);
  } else if (answer.status >= 400) {
    assertSchema("Error", answer.body);
  }
}

/** The error code of an error answer (already checked against the `Error` schema). */
export function codeOf(answer: Answer): string {
  return (answer.body as { detail: { code: string } }).detail.code;
}

export function expectError(answer: Answer, status: number, code: string): void {
  expect(answer.status, answer.text).toBe(status);
  expect(codeOf(answer), answer.text).toBe(code);
}
