/**
 * Running sessions in the admin API (`/admin/v1/sessions`): operators list them (all, or one
 * workspace's) and end one. Ending goes through the session lifecycle's one `end` path, so
 * the sandbox is destroyed, the workspace's slot freed and the usage closed exactly as when
 * the client ends it; the action is audited (admin_audit: who, when, which session).
 *
 *   GET    /sessions[?workspace=W]         200 { items: SessionView[] }, oldest first
 *   DELETE /sessions/:id[?workspace=W]     200 { ended: SessionView }; 404 session.not_found
 * Without `workspace`, DELETE finds the session in any workspace (ids are 144 random bits).
 */
import { Hono } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import { type Lease, leaseDeadline } from "../../store/coordination/records.js";
import type { GatewayServices } from "../gateway-services.js";
import { type AdminEnv, actorOf, workspaceQuery } from "./admin-routes.js";

/** A running session as operators see it; dates are ISO 8601. */
export interface SessionView {
  id: string;
  workspace: string;
  image: string;
  pool: string;
  sandboxId: string;
  /**
   * Where the sandbox runs, in the runtime's terms: with docker `<engine index>:<container id>`
   * (the engine is the node), with the process runtime the sandbox's process.
   */
  runtimeId: string;
  created: string;
  lastActivity: string;
  /** When it ends unless something touches it first (idle timeout or maximum lifetime). */
  expires: string;
  idleTimeoutSeconds: number;
  maxLifetimeSeconds: number;
  activeCalls: number;
}

/** Longer than any id sandpool mints: such a path names no session, and is not looked up. */
const MAX_SESSION_ID_LENGTH = 128;

export function adminSessionsRoutes(services: GatewayServices): Hono<AdminEnv> {
  const routes = new Hono<AdminEnv>();

  routes.get("/", async (c) => {
    c.set("operation", "AdminListSessions");
    const workspace = workspaceQuery(c);
    const now = Date.now();
    const leases = (await services.sessions.list(workspace)).filter((lease) => leaseDeadline(lease) > now);
    leases.sort((a, b) => a.createdAt - b.createdAt || a.sessionId.localeCompare(b.sessionId));
    return c.json({ items: leases.map(sessionView) });
  });

  routes.delete("/:id", async (c) => {
    c.set("operation", "AdminEndSession");
    const id = c.req.param("id");
    const workspace = workspaceQuery(c);
    const lease =
      id.length <= MAX_SESSION_ID_LENGTH ? await services.sessions.find(id, workspace) : undefined;
    const key = lease && { workspace: lease.workspace, sessionId: lease.sessionId };
    // Gone between the lookup and the end (its client or the reaper ended it): just as unknown.
    if (!lease || !key || !(await services.sessions.end(key, "ended_by_operator"))) {
      throw new SandpoolError("session.not_found", "no such session");
    }
    const actor = actorOf(c.get("caller"));
    await services.adminAudit?.record({
      actor,
      action: "session.end",
      target: lease.sessionId,
      workspace: lease.workspace,
      detail: {
        image: lease.image,
        pool: lease.pool,
        sandboxId: lease.sandbox.sandboxId,
        created: lease.createdAt,
      },
    });
    c.get("log").info(
      { session: lease.sessionId, workspace: lease.workspace, actor },
      "session ended by an operator",
    );
    return c.json({ ended: sessionView(lease) });
  });

  return routes;
}

function sessionView(lease: Lease): SessionView {
  return {
    id: lease.sessionId,
    workspace: lease.workspace,
    image: lease.image,
    pool: lease.pool,
    sandboxId: lease.sandbox.sandboxId,
    runtimeId: lease.sandbox.runtimeId,
    created: new Date(lease.createdAt).toISOString(),
    lastActivity: new Date(lease.lastActivityAt).toISOString(),
    expires: new Date(leaseDeadline(lease)).toISOString(),
    idleTimeoutSeconds: lease.idleTimeoutSeconds,
    maxLifetimeSeconds: lease.maxLifetimeSeconds,
    activeCalls: lease.activeCalls ?? 0,
  };
}
