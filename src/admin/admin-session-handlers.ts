/**
 * Running sessions in the admin API: operators list them (all, or one workspace's), oldest
 * first, and end one. Ending goes through the session lifecycle's one `end` path, so the
 * sandbox is destroyed, the workspace's slot freed and the usage closed exactly as when the
 * client ends it; the action is audited (admin_audit: who, when, which session). Without
 * `workspace`, ending finds the session in any workspace (ids are 144 random bits).
 */
import { SandpoolError } from "../contract/error-codes.js";
import { adminOperations } from "../operations/admin-operations.js";
import { given } from "../operations/admin-schemas/admin-params.js";
import type { SessionView } from "../operations/admin-schemas/session-schemas.js";
import type { OperationHandlers } from "../operations/handler.js";
import { handlersFor } from "../operations/typed-handlers.js";
import type { SessionLifecycle } from "../session/session-lifecycle.js";
import {
  type HibernationPhase,
  hibernationPhase,
  type Lease,
  leaseDeadline,
} from "../store/coordination/records.js";
import type { AdminAuditRepository } from "../store/sql/admin-audit-repository.js";
import { actorOf, answer } from "./admin-call.js";

/** Longer than any id sandpool mints: such a path names no session, and is not looked up. */
const MAX_SESSION_ID_LENGTH = 128;

export interface AdminSessionDeps {
  sessions: Pick<SessionLifecycle, "list" | "find" | "end" | "hibernate" | "resolve">;
  adminAudit: Pick<AdminAuditRepository, "record">;
}

export function adminSessionHandlers(services: AdminSessionDeps): OperationHandlers {
  return handlersFor(adminOperations, {
    "admin.sessions.list": async ({ args }) => {
      const now = Date.now();
      const leases = (await services.sessions.list(given(args.query.workspace))).filter(
        (lease) => leaseDeadline(lease) > now,
      );
      leases.sort((a, b) => a.createdAt - b.createdAt || a.sessionId.localeCompare(b.sessionId));
      return answer({ items: leases.map(sessionView) });
    },

    "admin.sessions.hibernate": async ({ args, caller, log }) => {
      const found = await findSession(services, args.params.id, given(args.query.workspace));
      if (!found) throw new SandpoolError("session.not_found", "no such session");
      const lease = await services.sessions.hibernate({
        workspace: found.workspace,
        sessionId: found.sessionId,
      });
      const actor = actorOf(caller);
      await services.adminAudit.record({
        actor,
        action: "session.hibernate",
        target: lease.sessionId,
        workspace: lease.workspace,
        detail: {
          pool: lease.pool,
          kind: lease.hibernation?.checkpoint.kind,
          bytes: lease.hibernation?.checkpoint.bytes,
        },
      });
      log.info(
        { session: lease.sessionId, workspace: lease.workspace, actor },
        "session hibernated by an operator",
      );
      return answer({ hibernated: sessionView(lease) });
    },

    // Resuming is what the session's next contract call would do (SessionLifecycle.resolve): the
    // same single restore per session, so an operator's resume and a client's call racing it
    // share one restore. A running session is answered as it is (restored: false), not refused:
    // the operator wanted it running, and it is.
    "admin.sessions.resume": async ({ args, caller, log }) => {
      const found = await findSession(services, args.params.id, given(args.query.workspace));
      if (!found) throw new SandpoolError("session.not_found", "no such session");
      if (!found.hibernation) return answer({ resumed: sessionView(found), restored: false });
      const key = { workspace: found.workspace, sessionId: found.sessionId };
      const lease = await services.sessions.resolve(key);
      const actor = actorOf(caller);
      await services.adminAudit.record({
        actor,
        action: "session.resume",
        target: lease.sessionId,
        workspace: lease.workspace,
        detail: { pool: lease.pool, kind: found.hibernation.checkpoint.kind },
      });
      log.info(
        { session: lease.sessionId, workspace: lease.workspace, actor },
        "session resumed by an operator",
      );
      return answer({ resumed: sessionView(lease), restored: true });
    },

    "admin.sessions.end": async ({ args, caller, log }) => {
      const lease = await findSession(services, args.params.id, given(args.query.workspace));
      // Gone between the lookup and the end (its client or the reaper ended it): just as unknown.
      if (
        !lease ||
        !(await services.sessions.end(
          { workspace: lease.workspace, sessionId: lease.sessionId },
          "ended_by_operator",
        ))
      )
        throw new SandpoolError("session.not_found", "no such session");
      const actor = actorOf(caller);
      await services.adminAudit.record({
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
      log.info(
        { session: lease.sessionId, workspace: lease.workspace, actor },
        "session ended by an operator",
      );
      return answer({ ended: sessionView(lease) });
    },
  });
}

/** Without `workspace`, in any workspace (ids are 144 random bits); an over-long id is not looked up. */
function findSession(services: AdminSessionDeps, id: string, workspace: string | undefined) {
  return id.length <= MAX_SESSION_ID_LENGTH
    ? services.sessions.find(id, workspace)
    : Promise.resolve(undefined);
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
    state: STATES[hibernationPhase(lease)],
    ...(lease.hibernation?.phase === "saved"
      ? {
          checkpoint: {
            kind: lease.hibernation.checkpoint.kind,
            bytes: lease.hibernation.checkpoint.bytes,
            hibernated: new Date(lease.hibernation.checkpoint.hibernatedAt).toISOString(),
          },
        }
      : {}),
    ...(lease.hibernationRefused
      ? {
          hibernationRefused: {
            code: lease.hibernationRefused.code,
            message: lease.hibernationRefused.message,
            at: new Date(lease.hibernationRefused.at).toISOString(),
          },
        }
      : {}),
  };
}

const STATES = {
  running: "running",
  saving: "hibernating",
  saved: "hibernated",
  restoring: "resuming",
} as const satisfies Record<HibernationPhase | "running", SessionView["state"]>;
