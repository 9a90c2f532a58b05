/** CreateSession, GetSession (the handle with the values in force) and DestroySession. */
import type { Principal } from "../auth/principal.js";
import type { CreateSessionRequest, SessionHandle } from "../contract/schemas.js";
import type { OperationHandler } from "../operations/handler.js";
import type { Lease } from "../store/coordination/records.js";
import type { SessionLifecycle } from "./session-lifecycle.js";

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

/** What CreateSession and DestroySession need: the session lifecycle's lease and end. */
export interface SessionHandlerDeps {
  sessions: Pick<SessionLifecycle, "create" | "end">;
}

export function sessionHandlers(services: SessionHandlerDeps): Record<string, OperationHandler> {
  return {
    // The policy passed at the gate; the pool, admission and the lease, each step undone when
    // a later one fails (SessionLifecycle.create).
    "sessions.create": async (call) => {
      const workspace = (call.caller as Principal).workspace;
      const request = call.args.body as CreateSessionRequest;
      const { lease } = await services.sessions.create(workspace, request, call.policy!);
      return { kind: "json", status: 201, body: handleOf(lease) };
    },

    // The lease was read by the pipeline's admit step (the same 404 for any session not the caller's).
    "sessions.get": async (call) => ({ kind: "json", status: 200, body: handleOf(call.session!.lease!) }),

    "sessions.delete": async (call) => {
      // Unknown, already ended and other workspaces' ids all answer 204: the session is
      // gone either way, and the answer says nothing about whether it ever existed.
      await services.sessions.end(call.session!.key, "destroyed");
      return { kind: "empty", status: 204 };
    },
  };
}
