/**
 * The per-operation cases the registry-generated tests need and cannot derive: one malformed
 * request of every operation (a new operation must bring its case: the test fails without
 * one), a valid request of every session operation (for the wrong-workspace check), and the
 * one list of checks that do not hold yet on this branch.
 */
import type { CaseRequest } from "./operation-requests.js";

/** What a malformed request of an operation answers, or why it has none. */
export type MalformedCase =
  | { request: CaseRequest; status: 400 | 422; code: string }
  /** Its only argument is free-form (an id): no value is malformed; the case pins what an odd one answers. */
  | { opaque: string; request: CaseRequest; status: number; code?: string }
  /** It takes no argument at all (the test holds the registry to that: no path parameter, query or body). */
  | { noArguments: true };

const malformedQuery = (path: string): MalformedCase => ({
  request: { path },
  status: 422,
  code: "request.malformed",
});
const malformedBody = (method: CaseRequest["method"], path: string, json: unknown): MalformedCase => ({
  request: { method, path, json },
  status: 422,
  code: "request.malformed",
});
const oddId = "x".repeat(300);

export const MALFORMED: Readonly<Record<string, MalformedCase>> = {
  "sessions.create": malformedBody("POST", "/sessions", { idle_timeout_seconds: "soon" }),
  "sessions.get": {
    opaque: "the session id",
    request: { path: `/sessions/${oddId}` },
    status: 404,
    code: "session.not_found",
  },
  "sessions.delete": {
    opaque: "the session id (gone either way: 204)",
    request: { method: "DELETE", path: `/sessions/${oddId}` },
    status: 204,
  },
  "sessions.exec": malformedBody("POST", "/sessions/{session}/exec", { tool: "code_execution", input: {} }),
  "files.list": {
    opaque: "the directory's path (a name too long for any file system names no directory)",
    request: { path: `/sessions/{session}/files/list?path=${"long-name".repeat(40)}` },
    status: 404,
    code: "file.not_found",
  },
  "files.get": malformedQuery("/sessions/{session}/files"),
  "files.put": {
    request: { method: "POST", path: "/sessions/{session}/files", form: { path: "no-file-part.txt" } },
    status: 422,
    code: "request.malformed",
  },

  "admin.workspaces.list": { noArguments: true },
  "admin.policy.get": malformedQuery("/admin/v1/workspaces/-bad/policy"),
  "admin.policy.put": malformedBody("PUT", "/admin/v1/workspaces/optests-ws/policy", {
    maxConcurrentSessions: "many",
  }),
  "admin.policy.delete": {
    request: { method: "DELETE", path: "/admin/v1/workspaces/-bad/policy" },
    status: 422,
    code: "request.malformed",
  },
  "admin.policy.audit": malformedQuery("/admin/v1/workspaces/optests-ws/audit?limit=0"),
  "admin.usage.summary": malformedQuery("/admin/v1/workspaces/optests-ws/usage?from=yesterday"),
  "admin.usage.report": malformedQuery("/admin/v1/usage"),
  "admin.policies.get": { noArguments: true },
  "admin.policies.apply": malformedBody("PUT", "/admin/v1/policies", { policies: 3 }),
  "admin.pools.list": { noArguments: true },
  "admin.pools.resize": malformedBody("PATCH", "/admin/v1/pools/default", { minIdle: -1 }),
  "admin.nodes.list": { noArguments: true },
  "admin.nodes.drain": {
    opaque: "the node id",
    request: { method: "POST", path: `/admin/v1/nodes/${oddId}/drain` },
    status: 404,
    code: "request.not_found",
  },
  "admin.nodes.undrain": {
    opaque: "the node id",
    request: { method: "POST", path: `/admin/v1/nodes/${oddId}/undrain` },
    status: 404,
    code: "request.not_found",
  },
  "admin.sessions.list": malformedQuery("/admin/v1/sessions?workspace=-bad"),
  "admin.sessions.end": {
    request: { method: "DELETE", path: "/admin/v1/sessions/some-id?workspace=-bad" },
    status: 422,
    code: "request.malformed",
  },
  "admin.sessions.hibernate": {
    request: { method: "POST", path: "/admin/v1/sessions/some-id/hibernate?workspace=-bad" },
    status: 422,
    code: "request.malformed",
  },
  "admin.sessions.resume": {
    request: { method: "POST", path: "/admin/v1/sessions/some-id/resume?workspace=-bad" },
    status: 422,
    code: "request.malformed",
  },
  "admin.keys.create": malformedBody("POST", "/admin/v1/keys", {}),
  "admin.keys.list": malformedQuery("/admin/v1/keys?workspace=-bad"),
  "admin.keys.revoke": {
    request: { method: "DELETE", path: "/admin/v1/keys/not-a-prefix" },
    status: 422,
    code: "request.malformed",
  },
  "admin.secrets.list": {
    request: { method: "GET", path: "/admin/v1/workspaces/-bad/secrets" },
    status: 422,
    code: "request.malformed",
  },
  "admin.secrets.put": malformedBody("PUT", "/admin/v1/workspaces/optests-ws/secrets/token", {
    value: "v",
    hosts: [],
    header: "Authorization",
    template: "Bearer {{secret}}",
  }),
  "admin.secrets.delete": {
    request: { method: "DELETE", path: "/admin/v1/workspaces/optests-ws/secrets/Not_A_Name" },
    status: 422,
    code: "request.malformed",
  },
  "admin.audit.list": malformedQuery("/admin/v1/audit?kind=everything"),
  "admin.explain": malformedBody("POST", "/admin/v1/explain", {
    workspace: "optests-ws",
    operation: "no.such.operation",
    args: {},
  }),

  "service.healthz": { noArguments: true },
  "service.readyz": { noArguments: true },
  "service.metrics": { noArguments: true },
  "service.openapi": { noArguments: true },
  "service.docs": { noArguments: true },
  "service.docs.index": { noArguments: true },
  "service.docs.asset": {
    opaque: "the file's name (one of a fixed list; any other is unknown)",
    request: { path: "/docs/no-such-file.js" },
    status: 404,
    code: "request.not_found",
  },
};

/**
 * A valid request of every operation on one session (`{session}`), made by its owner (which
 * must succeed) and by another workspace (which must answer as for an unknown session).
 */
export const SESSION_REQUESTS: Readonly<Record<string, CaseRequest>> = {
  "sessions.get": { path: "/sessions/{session}" },
  "sessions.delete": { method: "DELETE", path: "/sessions/{session}" },
  "sessions.exec": {
    method: "POST",
    path: "/sessions/{session}/exec",
    json: { tool: "code_execution", input: { code: "print(1)" } },
  },
  "files.list": { path: "/sessions/{session}/files/list" },
  "files.get": { path: "/sessions/{session}/files?path=optests.txt" },
  "files.put": {
    method: "POST",
    path: "/sessions/{session}/files",
    form: { path: "optests-put.txt", file: "hello" },
  },
};

/** The checks generated for every operation. */
export type CheckName =
  | "no token"
  | "wrong audience"
  | "wrong workspace"
  | "wrong method"
  | "unknown route"
  | "malformed args";
