/**
 * The admin API's operations, mounted for admin tokens at `/admin/v1` (never under the
 * contract's base path). Operators read and edit workspace policy, keys, pools, nodes and
 * sessions, and read usage and the audit trails.
 */
import type { AnswerKind, Effect, HttpMethod, OperationSpec } from "./operation.js";

function admin(
  id: string,
  method: HttpMethod,
  path: string,
  label: string,
  summary: string,
  options: { effects?: readonly Effect[]; answers?: readonly AnswerKind[]; success?: number } = {},
): OperationSpec {
  const reads = method === "GET";
  return {
    id: `admin.${id}`,
    group: "admin",
    mountedFor: "admin",
    method,
    path,
    label,
    summary,
    effects: options.effects ?? (reads ? ["read"] : ["admin"]),
    answers: options.answers ?? ["json"],
    success: options.success ?? 200,
  };
}

export const adminOperations: readonly OperationSpec[] = [
  admin("workspaces.list", "GET", "/workspaces", "AdminListWorkspaces", "Every workspace with a policy row."),
  admin(
    "policy.get",
    "GET",
    "/workspaces/{ws}/policy",
    "AdminGetPolicy",
    "A workspace's policy: its row, the values in force and where each comes from.",
  ),
  admin(
    "policy.put",
    "PUT",
    "/workspaces/{ws}/policy",
    "AdminPutPolicy",
    "Edit a workspace's policy (absent fields unchanged, null clears); audited.",
  ),
  admin(
    "policy.delete",
    "DELETE",
    "/workspaces/{ws}/policy",
    "AdminDeletePolicy",
    "Remove a workspace's policy row: the deployment defaults apply again.",
    { answers: ["empty"], success: 204 },
  ),
  admin(
    "policy.audit",
    "GET",
    "/workspaces/{ws}/audit",
    "AdminPolicyAudit",
    "The audit trail of a workspace's policy edits.",
  ),
  admin(
    "usage.summary",
    "GET",
    "/workspaces/{ws}/usage",
    "AdminUsage",
    "A workspace's durable usage over a time range, per kind and tool.",
  ),
  admin("usage.report", "GET", "/usage", "AdminUsageReport", "Usage reports per hour or UTC day."),
  admin(
    "policies.get",
    "GET",
    "/policies",
    "AdminGetPolicySet",
    "Every workspace policy as one document (policy as code).",
  ),
  admin(
    "policies.apply",
    "PUT",
    "/policies",
    "AdminApplyPolicySet",
    "Apply a policy document to every workspace it names; audited.",
  ),
  admin(
    "pools.list",
    "GET",
    "/pools",
    "AdminPools",
    "Every pool: its spec, the sizes in force and its counts.",
  ),
  admin(
    "pools.resize",
    "PATCH",
    "/pools/{name}",
    "AdminResizePool",
    "Change a pool's sizes at run time; audited.",
  ),
  admin("nodes.list", "GET", "/nodes", "AdminNodes", "The engine nodes an edge places sessions on."),
  admin(
    "nodes.drain",
    "POST",
    "/nodes/{id}/drain",
    "AdminDrainNode",
    "Stop placing sessions on a node; audited.",
  ),
  admin(
    "nodes.undrain",
    "POST",
    "/nodes/{id}/undrain",
    "AdminUndrainNode",
    "Place sessions on a drained node again; audited.",
  ),
  admin("sessions.list", "GET", "/sessions", "AdminListSessions", "Live sessions, of one workspace or all."),
  admin(
    "sessions.end",
    "DELETE",
    "/sessions/{id}",
    "AdminEndSession",
    "End a session as an operator; audited.",
  ),
  admin(
    "keys.create",
    "POST",
    "/keys",
    "AdminCreateKey",
    "Issue a workspace API key (its secret is shown once).",
    { success: 201 },
  ),
  admin("keys.list", "GET", "/keys", "AdminListKeys", "Workspace API keys (prefixes, never secrets)."),
  admin("keys.revoke", "DELETE", "/keys/{prefix}", "AdminRevokeKey", "Revoke a workspace API key."),
  admin(
    "audit.list",
    "GET",
    "/audit",
    "AdminAudit",
    "Refused calls (kind=denied) and operators' changes (kind=admin), newest first.",
  ),
  admin(
    "explain",
    "POST",
    "/explain",
    "AdminExplain",
    "The decision trace of a would-be call, without running it.",
    { effects: ["read"] },
  ),
];
