/**
 * Automatic hibernation: every running session idle for its workspace's
 * `hibernateAfterIdleSeconds` (policy; absent: never) is hibernated, a few at a time. Only the
 * sessions quiet that long are read (LeaseStore.quietLeases: an index, not every lease), at
 * most QUIET_BATCH per workspace a round; the rest follow next round. Every replica may run
 * it: of several, one claims each session (src/hibernate/session-hibernation.ts), and a call
 * that began since it was read refuses the claim.
 */
import type { Logger } from "pino";
import type { SessionHibernation } from "../hibernate/session-hibernation.js";
import type { PolicyService } from "../policy/policy-service.js";
import { MIN_IDLE_SECONDS } from "../policy-schema/policy-fields.js";
import type { LeaseStore } from "../store/coordination/lease-store.js";

/** Quiet sessions of one workspace hibernated in one round at most. */
const QUIET_BATCH = 100;
/** Saves at once: each is a checkpoint of a container. */
const SAVES_AT_ONCE = 8;

export interface IdleHibernationDeps {
  store: Pick<LeaseStore, "quietLeases">;
  policies: Pick<PolicyService, "forWorkspace">;
  hibernation: Pick<SessionHibernation, "hibernatesIdle" | "hibernate">;
  log: Logger;
  now: number;
}

/** Returns how many sessions it saved. */
export async function hibernateIdleSessions(deps: IdleHibernationDeps): Promise<number> {
  const { hibernation, now } = deps;
  const quiet = await deps.store.quietLeases({
    latest: now - MIN_IDLE_SECONDS * 1000,
    cutoff: (workspace) =>
      deps.policies.forWorkspace(workspace).then(
        ({ hibernateAfterIdleSeconds: after }) => (after === null ? null : now - after * 1000),
        () => null,
      ),
    limit: QUIET_BATCH,
  });
  const due = quiet.filter((lease) => hibernation.hibernatesIdle(lease));
  let saved = 0;
  for (let i = 0; i < due.length; i += SAVES_AT_ONCE) {
    const results = await Promise.all(
      due.slice(i, i + SAVES_AT_ONCE).map((lease) =>
        hibernation.hibernate({ workspace: lease.workspace, sessionId: lease.sessionId }).then(
          () => 1,
          (error: unknown) => {
            // A call began meanwhile, the workspace is at its bound, or the save failed
            // (the session runs on): it is tried again on a later round.
            deps.log.debug({ err: error, session: lease.sessionId }, "an idle session did not hibernate");
            return 0;
          },
        ),
      ),
    );
    saved += results.reduce<number>((sum, one) => sum + one, 0);
  }
  return saved;
}
