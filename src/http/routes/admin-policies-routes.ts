/**
 * Policy as code in the admin API: the whole set of workspace policies at once
 * (src/policy/policy-set.ts, `sandpool policy apply -f`).
 *
 *   GET /policies                  200 { policies: { <workspace>: fields } }  (what is in force, as a set)
 *   PUT /policies[?dryRun=true]    200 { dryRun, changed, changes: [{ workspace, action, before, after }] }
 *       body { policies: { <workspace>: { <field>: value } } }: absent fields are no narrowing,
 *       and a workspace left out loses its row. One transaction; a second identical PUT
 *       changes nothing (every action "unchanged"). 422 lists every problem of every entry
 *       and changes nothing. Each workspace changed is audited and announced to every replica.
 */
import { Hono } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import type { PolicyAdmin } from "../../policy/policy-admin.js";
import type { WorkspacePolicyRow } from "../../store/sql/policy-row.js";
import { jsonBodyLimit, readJsonBody } from "../common/read-json-body.js";
import type { GatewayServices } from "../gateway-services.js";
import { type AdminEnv, actorOf } from "./admin-routes.js";

/** A row as a set entry: only what it narrows (the shape `policy apply -f` reads back). */
function entryOf(row: WorkspacePolicyRow): Record<string, unknown> {
  const { workspaceId: _w, version: _v, updatedAt: _u, updatedBy: _b, ...fields } = row;
  return Object.fromEntries(
    Object.entries(fields).filter(
      ([field, value]) => value !== null && !(field === "enabled" && value === true),
    ),
  );
}

export function adminPoliciesRoutes(services: GatewayServices, policyAdmin: PolicyAdmin): Hono<AdminEnv> {
  const routes = new Hono<AdminEnv>();

  routes.get("/", async (c) => {
    c.set("operation", "AdminGetPolicySet");
    const rows = await policyAdmin.list();
    return c.json({ policies: Object.fromEntries(rows.map((row) => [row.workspaceId, entryOf(row)])) });
  });

  routes.put("/", jsonBodyLimit(services.limits.maxJsonBodyBytes), async (c) => {
    c.set("operation", "AdminApplyPolicySet");
    const dryRunQuery = c.req.query("dryRun");
    if (dryRunQuery !== undefined && dryRunQuery !== "true" && dryRunQuery !== "false")
      throw new SandpoolError("request.malformed", "dryRun must be true or false");
    const dryRun = dryRunQuery === "true";
    const body = await readJsonBody(c);
    const actor = actorOf(c.get("caller"));
    const changes = await policyAdmin.apply(body, actor, dryRun);
    const changed = changes.filter((change) => change.action !== "unchanged");
    if (!dryRun && changed.length > 0)
      c.get("log").info(
        { actor, workspaces: changed.map((change) => `${change.action}:${change.workspace}`) },
        "policy set applied",
      );
    return c.json({ dryRun, changed: changed.length > 0, changes });
  });

  return routes;
}
