/**
 * The admin API's operations, mounted for admin tokens at `/admin/v1` (never under the
 * contract's base path). Operators read and edit workspace policy, keys, pools, nodes and
 * sessions, and read usage and the audit trails. Each declares the shapes of its path
 * parameters, query, body and answer (admin-schemas/); the handlers are in src/admin/.
 */
import type { $ZodType } from "zod/v4/core";
import type { ErrorCode } from "../contract/error-codes.js";
import { workspacePathParams } from "./admin-schemas/admin-params.js";
import { auditQuerySchema, auditResultSchema } from "./admin-schemas/audit-schemas.js";
import { explainBodySchema, explainResultSchema } from "./admin-schemas/explain-schemas.js";
import {
  createdKeySchema,
  createKeySchema,
  keyParams,
  keysQuerySchema,
  keysResultSchema,
  revokedResultSchema,
} from "./admin-schemas/key-schemas.js";
import { nodeParams, nodesResultSchema, nodeViewSchema } from "./admin-schemas/node-schemas.js";
import {
  policyAuditQuerySchema,
  policyAuditResultSchema,
  policyEditSchema,
  policyViewSchema,
  workspacesResultSchema,
} from "./admin-schemas/policy-schemas.js";
import {
  applyQuerySchema,
  applyResultSchema,
  policySetBodySchema,
  policySetSchema,
} from "./admin-schemas/policy-set-schemas.js";
import {
  poolParams,
  poolResizeSchema,
  poolStatusSchema,
  poolsResultSchema,
} from "./admin-schemas/pool-schemas.js";
import {
  secretBodySchema,
  secretParams,
  secretsResultSchema,
  secretViewSchema,
} from "./admin-schemas/secret-schemas.js";
import {
  endedResultSchema,
  hibernatedResultSchema,
  resumedResultSchema,
  sessionParams,
  sessionsQuerySchema,
  sessionsResultSchema,
} from "./admin-schemas/session-schemas.js";
import {
  usageReportQuerySchema,
  usageReportResultSchema,
  usageSummaryQuerySchema,
  usageSummaryResultSchema,
} from "./admin-schemas/usage-schemas.js";
import type { AnswerKind, Effect, HttpMethod, OperationSpec } from "./operation.js";
import type { SpecOf } from "./typed-handlers.js";

interface AdminOptions {
  params?: $ZodType;
  query?: $ZodType;
  body?: $ZodType;
  result?: $ZodType;
  errors?: readonly ErrorCode[];
  effects?: readonly Effect[];
  answers?: readonly AnswerKind[];
  success?: number;
  alsoSuccess?: number;
}

/** An admin spec keeps its id, path and schemas in its type: its handler's types come from them. */
type AdminSpec<Id extends string, Path extends string, Options extends AdminOptions> = OperationSpec & {
  id: `admin.${Id}`;
  path: Path;
} & Pick<Options, Extract<keyof Options, "params" | "query" | "body" | "result">>;

function admin<
  const Id extends string,
  const Path extends string,
  const Options extends AdminOptions = Record<never, never>,
>(
  id: Id,
  method: HttpMethod,
  path: Path,
  label: string,
  summary: string,
  options: Options = {} as Options,
): AdminSpec<Id, Path, Options> {
  const { effects, answers, success, alsoSuccess, ...shapes } = options;
  // TypeScript cannot follow a generic object through a rest and a spread: the shapes are `options`'.
  const spec: OperationSpec = {
    id: `admin.${id}`,
    group: "admin",
    mountedFor: "admin",
    method,
    path,
    label,
    summary,
    effects: effects ?? (method === "GET" ? ["read"] : ["admin"]),
    answers: answers ?? ["json"],
    success: success ?? 200,
    ...(alsoSuccess === undefined ? {} : { alsoSuccess }),
    ...shapes,
  };
  return spec as AdminSpec<Id, Path, Options>;
}

const ofWorkspace = { params: workspacePathParams };

export const adminOperations = [
  admin(
    "workspaces.list",
    "GET",
    "/workspaces",
    "AdminListWorkspaces",
    "Every workspace with a policy row.",
    {
      result: workspacesResultSchema,
    },
  ),
  admin(
    "policy.get",
    "GET",
    "/workspaces/{ws}/policy",
    "AdminGetPolicy",
    "A workspace's policy: its row, the values in force and where each comes from.",
    { ...ofWorkspace, result: policyViewSchema },
  ),
  admin(
    "policy.put",
    "PUT",
    "/workspaces/{ws}/policy",
    "AdminPutPolicy",
    "Edit a workspace's policy (absent fields unchanged, null clears); audited.",
    { ...ofWorkspace, body: policyEditSchema, result: policyViewSchema },
  ),
  admin(
    "policy.delete",
    "DELETE",
    "/workspaces/{ws}/policy",
    "AdminDeletePolicy",
    "Remove a workspace's policy row: the deployment defaults apply again.",
    { ...ofWorkspace, answers: ["empty"], success: 204 },
  ),
  admin(
    "policy.audit",
    "GET",
    "/workspaces/{ws}/audit",
    "AdminPolicyAudit",
    "The audit trail of a workspace's policy edits.",
    { ...ofWorkspace, query: policyAuditQuerySchema, result: policyAuditResultSchema },
  ),
  admin(
    "usage.summary",
    "GET",
    "/workspaces/{ws}/usage",
    "AdminUsage",
    "A workspace's durable usage over a time range, per kind and tool.",
    {
      errors: ["request.malformed"],
      ...ofWorkspace,
      query: usageSummaryQuerySchema,
      result: usageSummaryResultSchema,
    },
  ),
  admin("usage.report", "GET", "/usage", "AdminUsageReport", "Usage reports per hour or UTC day.", {
    query: usageReportQuerySchema,
    result: usageReportResultSchema,
  }),
  admin(
    "policies.get",
    "GET",
    "/policies",
    "AdminGetPolicySet",
    "Every workspace policy as one document (policy as code).",
    { result: policySetSchema },
  ),
  admin(
    "policies.apply",
    "PUT",
    "/policies",
    "AdminApplyPolicySet",
    "Apply a policy document to every workspace it names; audited.",
    {
      errors: ["request.malformed"],
      query: applyQuerySchema,
      body: policySetBodySchema,
      result: applyResultSchema,
    },
  ),
  admin(
    "pools.list",
    "GET",
    "/pools",
    "AdminPools",
    "Every pool: its spec, the sizes in force and its counts.",
    { result: poolsResultSchema },
  ),
  admin(
    "pools.resize",
    "PATCH",
    "/pools/{name}",
    "AdminResizePool",
    "Change a pool's sizes at run time; audited.",
    { errors: ["request.not_found"], params: poolParams, body: poolResizeSchema, result: poolStatusSchema },
  ),
  admin("nodes.list", "GET", "/nodes", "AdminNodes", "The engine nodes an edge places sessions on.", {
    result: nodesResultSchema,
  }),
  admin(
    "nodes.drain",
    "POST",
    "/nodes/{id}/drain",
    "AdminDrainNode",
    "Stop placing sessions on a node; audited.",
    { errors: ["request.not_found"], params: nodeParams, result: nodeViewSchema },
  ),
  admin(
    "nodes.undrain",
    "POST",
    "/nodes/{id}/undrain",
    "AdminUndrainNode",
    "Place sessions on a drained node again; audited.",
    { errors: ["request.not_found"], params: nodeParams, result: nodeViewSchema },
  ),
  admin("sessions.list", "GET", "/sessions", "AdminListSessions", "Live sessions, of one workspace or all.", {
    query: sessionsQuerySchema,
    result: sessionsResultSchema,
  }),
  admin(
    "sessions.hibernate",
    "POST",
    "/sessions/{id}/hibernate",
    "AdminHibernateSession",
    "Hibernate a session: its sandbox saved to a checkpoint and removed, resumed by its next call; audited.",
    {
      errors: [
        "session.not_found",
        "session.busy",
        "session.not_hibernatable",
        "quota.hibernated_sessions",
        "capacity.checkpoint_space",
      ],
      params: sessionParams,
      query: sessionsQuerySchema,
      result: hibernatedResultSchema,
    },
  ),
  admin(
    "sessions.resume",
    "POST",
    "/sessions/{id}/resume",
    "AdminResumeSession",
    "Resume a hibernated session now (its next call would): restored from its checkpoint into a sandbox; a running one is left as it is; audited.",
    {
      // A restore that fails keeps the checkpoint and answers 503 with Retry-After; a session that
      // expired while hibernated is ended on the way and answers as unknown.
      errors: ["session.not_found", "session.resume_failed"],
      params: sessionParams,
      query: sessionsQuerySchema,
      result: resumedResultSchema,
    },
  ),
  admin(
    "sessions.end",
    "DELETE",
    "/sessions/{id}",
    "AdminEndSession",
    "End a session as an operator; audited.",
    {
      errors: ["session.not_found"],
      params: sessionParams,
      query: sessionsQuerySchema,
      result: endedResultSchema,
    },
  ),
  admin(
    "keys.create",
    "POST",
    "/keys",
    "AdminCreateKey",
    "Issue a workspace API key (its secret is shown once).",
    { body: createKeySchema, result: createdKeySchema, success: 201 },
  ),
  admin("keys.list", "GET", "/keys", "AdminListKeys", "Workspace API keys (prefixes, never secrets).", {
    query: keysQuerySchema,
    result: keysResultSchema,
  }),
  admin("keys.revoke", "DELETE", "/keys/{prefix}", "AdminRevokeKey", "Revoke a workspace API key.", {
    params: keyParams,
    result: revokedResultSchema,
  }),
  admin(
    "secrets.list",
    "GET",
    "/workspaces/{ws}/secrets",
    "AdminListSecrets",
    "A workspace's secrets: names and bindings, never values.",
    { errors: ["secrets.not_configured"], ...ofWorkspace, result: secretsResultSchema },
  ),
  admin(
    "secrets.put",
    "PUT",
    "/workspaces/{ws}/secrets/{name}",
    "AdminPutSecret",
    "Store a workspace secret and its binding (201 created, 200 replaced); the value is never answered; audited.",
    {
      errors: ["secrets.not_configured"],
      params: secretParams,
      body: secretBodySchema,
      result: secretViewSchema,
      alsoSuccess: 201,
    },
  ),
  admin(
    "secrets.delete",
    "DELETE",
    "/workspaces/{ws}/secrets/{name}",
    "AdminDeleteSecret",
    "Remove a workspace secret; audited.",
    { errors: ["secrets.not_configured"], params: secretParams, answers: ["empty"], success: 204 },
  ),
  admin(
    "audit.list",
    "GET",
    "/audit",
    "AdminAudit",
    "Refused calls (kind=denied) and operators' changes (kind=admin), newest first.",
    { errors: ["request.malformed"], query: auditQuerySchema, result: auditResultSchema },
  ),
  admin(
    "explain",
    "POST",
    "/explain",
    "AdminExplain",
    "The decision trace of a would-be call, without running it.",
    {
      effects: ["read"],
      body: explainBodySchema,
      result: explainResultSchema,
      errors: ["request.malformed"],
    },
  ),
] as const satisfies readonly OperationSpec[];

/** The spec of an admin operation, by id, with its types. */
export type AdminOperation<Id extends (typeof adminOperations)[number]["id"]> = SpecOf<
  typeof adminOperations,
  Id
>;
