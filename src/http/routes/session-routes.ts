/** CreateSession, GetSession (the handle with the values in force) and DestroySession. */
import type { Context, Hono, MiddlewareHandler } from "hono";
import { malformed } from "../../contract/error-codes.js";
import { createSessionRequest, issueProblems, type SessionHandle } from "../../contract/schemas.js";
import type { Lease } from "../../store/coordination/records.js";
import { readJsonBody } from "../common/read-json-body.js";
import type { GatewayEnv } from "../gateway-env.js";
import type { GatewayServices } from "../gateway-services.js";

export function handleOf(lease: Lease): SessionHandle {
  return {
    session_id: lease.sessionId,
    idle_timeout_seconds: lease.idleTimeoutSeconds,
    max_lifetime_seconds: lease.maxLifetimeSeconds,
    created_at: lease.createdAt / 1000,
    last_activity_at: lease.lastActivityAt / 1000,
    image: lease.image,
  };
}

export function sessionKey(c: Context<GatewayEnv>) {
  return { workspace: c.get("principal").workspace, sessionId: c.req.param("id")! };
}

export function registerSessionRoutes(
  app: Hono<GatewayEnv>,
  services: GatewayServices,
  jsonLimit: MiddlewareHandler<GatewayEnv>,
): void {
  app.post("/sessions", jsonLimit, async (c) => {
    const parsed = createSessionRequest.safeParse(await readJsonBody(c, { optional: true }));
    if (!parsed.success) throw malformed(issueProblems(parsed.error));
    const { lease } = await services.sessions.create(c.get("principal").workspace, parsed.data);
    return c.json(handleOf(lease), 201);
  });

  app.get("/sessions/:id", async (c) => {
    return c.json(handleOf(await services.sessions.resolve(sessionKey(c))));
  });

  app.delete("/sessions/:id", async (c) => {
    // Unknown, already ended and other workspaces' ids all answer 204: the session is
    // gone either way, and the answer says nothing about whether it ever existed.
    await services.sessions.end(sessionKey(c), "destroyed");
    return c.body(null, 204);
  });
}
