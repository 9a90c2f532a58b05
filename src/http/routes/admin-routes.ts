/**
 * The admin API (DESIGN.md section 5), served at `/admin/v1`, beside the contract and never
 * under its base path: operators read and edit workspace policy, read its audit trail, a
 * workspace's usage and the pools. Every request needs a valid bearer token (401 first, as
 * on contract routes, so an anonymous caller learns nothing) and then an admin token (403
 * `auth.forbidden`). Edits go through PolicyAdmin: validated against the deployment (a row
 * may only narrow; 422 lists every problem), audited, and announced to every replica, so
 * the next request anywhere sees them.
 *
 * Shapes (dates are ISO 8601 strings; policy fields are camelCase, as in the 422 messages):
 *   GET    /workspaces                 200 { workspaces: PolicyRow[] }
 *   GET    /workspaces/:ws/policy      200 PolicyView
 *   PUT    /workspaces/:ws/policy      200 PolicyView (body: editable fields; absent = unchanged, null = cleared)
 *   DELETE /workspaces/:ws/policy      204 (also when there was no row)
 *   GET    /workspaces/:ws/audit       200 { workspace, entries: AuditEntry[] }   ?limit=1..1000 (100)
 *   GET    /workspaces/:ws/usage       200 { workspace, from, to, usage: UsageRow[] }  ?from=&to= (last 24 h)
 *   GET    /usage?workspace=W&since=&until=&by=hour|day  (admin-usage-routes.ts: the report)
 *   GET    /policies, PUT /policies    (admin-policies-routes.ts: policy as code)
 *   GET    /pools, PATCH /pools/:name  (admin-pools-routes.ts)
 *   GET    /nodes, POST /nodes/:id/drain|undrain  (admin-nodes-routes.ts)
 *   GET    /sessions, DELETE /sessions/:id  (admin-sessions-routes.ts)
 *   POST   /keys, GET /keys, DELETE /keys/:prefix  (admin-keys-routes.ts: workspace API keys)
 *   GET    /audit?workspace=&kind=denied|admin  (admin-audit-routes.ts: refusals and admin changes)
 * PolicyView is { workspace, configured, row: PolicyRow | null, effective, sources }, where
 * `sources` names, per effective field, where its value comes from: "deployment" or "workspace".
 * Errors are the usual { detail: { code, message } }; a refused edit adds `problems: string[]`.
 */
import type { HttpBindings } from "@hono/node-server";
import { type Context, Hono, type MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import type { Caller } from "../../auth/principal.js";
import { workspaceIdPattern } from "../../auth/workspace-claim.js";
import { SandpoolError } from "../../contract/error-codes.js";
import { parseIsoInstant } from "../../contract/iso-instant.js";
import { explainHandler } from "../../explain/explain-handler.js";
import { operations } from "../../operations/registry.js";
import type { EffectivePolicy } from "../../policy/effective-policy.js";
import { effectivePolicy } from "../../policy/effective-policy.js";
import type { PolicyAdmin } from "../../policy/policy-admin.js";
import type { WorkspacePolicyRow } from "../../store/sql/policy-row.js";
import { bindOperation } from "../common/bind-operation.js";
import { jsonBodyLimit, readJsonBody } from "../common/read-json-body.js";
import type { GatewayServices } from "../gateway-services.js";
import { countAuthFailure, verifyBearer } from "../middleware/authenticate.js";
import { passedAuthentication } from "../middleware/unauthenticated-gate.js";
import { adminAuditRoutes } from "./admin-audit-routes.js";
import { adminKeysRoutes } from "./admin-keys-routes.js";
import { adminNodesRoutes } from "./admin-nodes-routes.js";
import { adminPoliciesRoutes } from "./admin-policies-routes.js";
import { adminPoolsRoutes } from "./admin-pools-routes.js";
import { adminSessionsRoutes } from "./admin-sessions-routes.js";
import { adminUsageRoutes } from "./admin-usage-routes.js";

export const ADMIN_BASE_PATH = "/admin/v1";

/** The request variables of the admin API: the contract's, with a caller that may lack a workspace. */
export interface AdminEnv {
  Bindings: HttpBindings;
  Variables: {
    requestId: string;
    log: Logger;
    operation: string;
    caller: Caller;
  };
}

export type PolicySource = "deployment" | "workspace";

export interface PolicyView {
  workspace: string;
  configured: boolean;
  row: WorkspacePolicyRow | null;
  effective: Omit<EffectivePolicy, "defaultImage"> & { defaultImage: string | null };
  sources: Record<string, PolicySource>;
}

const DEFAULT_AUDIT_LIMIT = 100;
const MAX_AUDIT_LIMIT = 1_000;
const DAY_MS = 24 * 3600 * 1000;
/** The range a usage query may ask about: from the epoch (a day before it for `from`'s default) to year 9999. */
const EARLIEST_DATE_MS = 0;
const LATEST_DATE_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export function createAdminApp(services: GatewayServices, policyAdmin: PolicyAdmin): Hono<AdminEnv> {
  const admin = new Hono<AdminEnv>();
  const jsonLimit = jsonBodyLimit(services.limits.maxJsonBodyBytes);

  admin.use("*", requireAdmin(services));

  admin.get("/workspaces", async (c) => {
    c.set("operation", "AdminListWorkspaces");
    return c.json({ workspaces: await policyAdmin.list() });
  });

  admin.get("/workspaces/:ws/policy", async (c) => {
    c.set("operation", "AdminGetPolicy");
    return c.json(await policyView(services, policyAdmin, workspaceParam(c)));
  });

  admin.put("/workspaces/:ws/policy", jsonLimit, async (c) => {
    c.set("operation", "AdminPutPolicy");
    const workspace = workspaceParam(c);
    const edit = await readJsonBody(c);
    const caller = c.get("caller");
    await policyAdmin.put(workspace, edit, actorOf(caller));
    c.get("log").info({ workspace, actor: actorOf(caller) }, "workspace policy edited");
    return c.json(await policyView(services, policyAdmin, workspace));
  });

  admin.delete("/workspaces/:ws/policy", async (c) => {
    c.set("operation", "AdminDeletePolicy");
    const workspace = workspaceParam(c);
    const deleted = await policyAdmin.delete(workspace, actorOf(c.get("caller")));
    if (deleted)
      c.get("log").info({ workspace, actor: actorOf(c.get("caller")) }, "workspace policy deleted");
    return c.body(null, 204);
  });

  admin.get("/workspaces/:ws/audit", async (c) => {
    c.set("operation", "AdminPolicyAudit");
    const workspace = workspaceParam(c);
    const limit = integerQuery(c.req.query("limit"), "limit", 1, MAX_AUDIT_LIMIT) ?? DEFAULT_AUDIT_LIMIT;
    return c.json({ workspace, entries: await policyAdmin.audit(workspace, limit) });
  });

  admin.get("/workspaces/:ws/usage", async (c) => {
    c.set("operation", "AdminUsage");
    const workspace = workspaceParam(c);
    if (!services.usageSummary) throw new SandpoolError("request.not_found", "usage is not available here");
    const to = dateQuery(c.req.query("to"), "to") ?? new Date();
    const from = dateQuery(c.req.query("from"), "from") ?? new Date(to.getTime() - DAY_MS);
    if (from.getTime() >= to.getTime())
      throw new SandpoolError("request.malformed", "from must be before to");
    const usage = await services.usageSummary(workspace, from, to);
    return c.json({ workspace, from: from.toISOString(), to: to.toISOString(), usage });
  });

  admin.route("/policies", adminPoliciesRoutes(services, policyAdmin));
  admin.route("/usage", adminUsageRoutes(services));
  admin.route("/pools", adminPoolsRoutes(services));
  admin.route("/nodes", adminNodesRoutes(services));
  admin.route("/sessions", adminSessionsRoutes(services));

  admin.route("/keys", adminKeysRoutes(services));
  admin.route("/audit", adminAuditRoutes(services));
  bindOperation(admin, operations.get("admin.explain")!, explainHandler(services), jsonLimit);

  // Nothing under /admin/v1 falls through to the contract routes (which would ask for a workspace).
  admin.all("*", () => {
    throw new SandpoolError("request.not_found", "no such admin route");
  });
  return admin;
}

/** 401 without a valid token (counted like any failed attempt), then 403 unless it is an admin token. */
function requireAdmin(services: GatewayServices): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const caller = await verifyBearer(
      services,
      c.req.header("authorization"),
      c.env?.incoming?.socket?.remoteAddress,
    );
    if (caller.admin !== true) {
      const refusal = new SandpoolError("auth.forbidden", "the admin API needs an admin token");
      countAuthFailure(services.metrics, refusal);
      throw refusal;
    }
    c.set("caller", caller);
    passedAuthentication(c);
    await next();
  };
}

/** Who the audit trail names for an edit: the token's subject, else "admin". */
export function actorOf(caller: Caller): string {
  return caller.subject && caller.subject.length > 0 ? caller.subject : "admin";
}

function workspaceParam(c: Context<AdminEnv>): string {
  const workspace = c.req.param("ws") ?? "";
  if (!workspaceIdPattern.test(workspace)) {
    throw new SandpoolError(
      "request.malformed",
      "not a valid workspace id (letters, digits, . _ : -; 128 at most, starting with a letter or digit)",
    );
  }
  return workspace;
}

async function policyView(
  services: GatewayServices,
  policyAdmin: PolicyAdmin,
  workspace: string,
): Promise<PolicyView> {
  const { effective, row } = await policyAdmin.explain(workspace);
  const deploymentOnly = effectivePolicy(workspace, services.policies.deployment, undefined);
  const sources: Record<string, PolicySource> = {};
  for (const field of Object.keys(effective) as (keyof EffectivePolicy)[]) {
    if (field === "workspace" || field === "configured") continue;
    sources[field] = sourceOf(field, effective, deploymentOnly, row);
  }
  return {
    workspace,
    configured: effective.configured,
    row: row ?? null,
    effective: { ...effective, defaultImage: effective.defaultImage ?? null },
    sources,
  };
}

/**
 * "workspace" when the row decides the value in force: it differs from what the deployment
 * alone gives (a derived default clamped by the row's ceiling, too), or the row sets this
 * very value; else "deployment".
 */
function sourceOf(
  field: keyof EffectivePolicy,
  effective: EffectivePolicy,
  deploymentOnly: EffectivePolicy,
  row: WorkspacePolicyRow | undefined,
): PolicySource {
  if (row === undefined) return "deployment";
  if (!sameValue(effective[field], deploymentOnly[field])) return "workspace";
  if (!(field in row)) return "deployment";
  const rowValue = row[field as keyof WorkspacePolicyRow];
  return rowValue != null && sameValue(rowValue, effective[field]) ? "workspace" : "deployment";
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((item, i) => item === b[i]);
  return a === b;
}

export function integerQuery(
  value: string | undefined,
  name: string,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined || value === "") return undefined;
  const parsed = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(parsed >= min && parsed <= max))
    throw new SandpoolError("request.malformed", `${name} must be a whole number from ${min} to ${max}`);
  return parsed;
}

/** The optional `?workspace=` of an operator's listing, checked like any workspace id. */
export function workspaceQuery(c: Context<AdminEnv>): string | undefined {
  const workspace = c.req.query("workspace");
  if (workspace === undefined || workspace === "") return undefined;
  if (!workspaceIdPattern.test(workspace)) {
    throw new SandpoolError(
      "request.malformed",
      "workspace is not a valid workspace id (letters, digits, . _ : -; 128 at most, starting with a letter or digit)",
    );
  }
  return workspace;
}

export function dateQuery(value: string | undefined, name: string): Date | undefined {
  if (value === undefined || value === "") return undefined;
  // A date is a UTC day; a date-time must name its zone (src/contract/iso-instant.ts says why).
  const parsed = parseIsoInstant(value);
  if (!parsed.ok) throw new SandpoolError("request.malformed", `${name}: ${parsed.reason}`);
  const { date } = parsed;
  // Postgres has no year 0 (nor anything before 4713 BC): out of a sane range, the query was a 500.
  if (date.getTime() < EARLIEST_DATE_MS || date.getTime() > LATEST_DATE_MS)
    throw new SandpoolError("request.malformed", `${name} must lie between 1970 and 9999, got '${value}'`);
  return date;
}
