/**
 * The audit trails in the admin API (src/store/sql/audit-repository.ts):
 *
 *   GET /audit?workspace=W&kind=denied|admin&since=&until=&limit=1..1000 (100)
 *       200 { items: AuditItem[] }, newest first
 *
 * `kind=denied`: contract calls refused after authentication (policy, quota, capacity,
 * unknown session), each with `operation`, `code`, `at`, `principal` and how many identical
 * refusals it stands for. `kind=admin`: operators' changes (policy edits, keys, sessions
 * ended, pools resized). Without `kind`, both; without `workspace`, every workspace's.
 */
import { Hono } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import { AUDIT_KINDS, type AuditKind } from "../../store/sql/audit-repository.js";
import type { GatewayServices } from "../gateway-services.js";
import { type AdminEnv, dateQuery, integerQuery, workspaceQuery } from "./admin-routes.js";

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1_000;

export function adminAuditRoutes(services: GatewayServices): Hono<AdminEnv> {
  const routes = new Hono<AdminEnv>();

  routes.get("/", async (c) => {
    c.set("operation", "AdminAudit");
    const audit = services.audit;
    if (!audit) throw new SandpoolError("request.not_found", "the audit trail is not available here");
    const kind = c.req.query("kind") || undefined;
    if (kind !== undefined && !(AUDIT_KINDS as readonly string[]).includes(kind))
      throw new SandpoolError("request.malformed", `kind must be ${AUDIT_KINDS.join(" or ")}, got '${kind}'`);
    const since = dateQuery(c.req.query("since"), "since");
    const until = dateQuery(c.req.query("until"), "until");
    if (since && until && since.getTime() >= until.getTime())
      throw new SandpoolError("request.malformed", "since must be before until");
    const limit = integerQuery(c.req.query("limit"), "limit", 1, MAX_LIMIT) ?? DEFAULT_LIMIT;
    // This replica's refusals still in the usage buffer are part of the answer.
    await services.usage.flush().catch(() => undefined);
    const items = await audit.list({
      workspace: workspaceQuery(c),
      kind: kind as AuditKind | undefined,
      since,
      until,
      limit,
    });
    return c.json({ items });
  });

  return routes;
}
