/** CreateSession, GetSession (the handle with the values in force) and DestroySession. */
import type { Principal } from "../auth/principal.js";
import type { CreateSessionRequest, SessionHandle } from "../contract/schemas.js";
import { judgeNarrowing, narrowingRefusal, parseSessionEgress } from "../egress/session-egress.js";
import { contractOperations } from "../operations/contract-operations.js";
import type { OperationHandlers } from "../operations/handler.js";
import { handlersFor } from "../operations/typed-handlers.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { Lease, LeaseEgress } from "../store/coordination/records.js";
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
  /** The names of a workspace's secrets (CreateSession's `sandpool.secrets`); absent: it holds none. */
  secretNames?: (workspace: string) => Promise<string[]>;
}

/**
 * The session's egress narrowing (`sandpool.egress.hosts`, `sandpool.secrets`), checked
 * before admission: 422 for a bad shape, 403 naming the field that would widen the
 * workspace's egress (src/egress/session-egress.ts).
 */
async function sessionEgressOf(
  services: SessionHandlerDeps,
  workspace: string,
  request: CreateSessionRequest,
  policy: EffectivePolicy,
): Promise<LeaseEgress | undefined> {
  const asked = parseSessionEgress(request);
  if (!asked) return undefined;
  // The secrets store is read only when the session names secrets.
  const names = asked.secrets?.length ? ((await services.secretNames?.(workspace)) ?? []) : [];
  const verdict = judgeNarrowing(asked, policy, names);
  if (!verdict.allowed) throw narrowingRefusal(verdict);
  return verdict.egress;
}

export function sessionHandlers(services: SessionHandlerDeps): OperationHandlers {
  return handlersFor(contractOperations, {
    // The policy passed at the gate; the pool, admission and the lease, each step undone when
    // a later one fails (SessionLifecycle.create).
    "sessions.create": async (call) => {
      const workspace = (call.caller as Principal).workspace;
      const request = call.args.body;
      const egress = await sessionEgressOf(services, workspace, request, call.policy!);
      const { lease } = await services.sessions.create(workspace, request, call.policy!, egress);
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
  });
}
