/**
 * `sandpool nodes drain` moves sessions when checkpoints are shared (docs/operating.md): on
 * every reap round an edge hibernates the idle sessions of draining nodes whose pool can
 * hibernate; their next call resumes them on another node (node-hibernation-sandboxes.ts),
 * and the drained node empties without ending them. A session with a call in flight is tried
 * again on a later round. Without shared checkpoints a drain lets sessions finish as before
 * (a node-local checkpoint would resume on the draining node alone).
 */
import type { Logger } from "pino";
import type { LeaseStore } from "../../store/coordination/lease-store.js";
import { type Lease, runsASandbox } from "../../store/coordination/records.js";
import type { NodeDirectory } from "./node-directory.js";

/** What the drain needs of hibernation (src/hibernate/session-hibernation.ts). */
export interface DrainHibernation {
  canHibernate(poolName: string): boolean;
  hibernate(key: { workspace: string; sessionId: string }): Promise<Lease>;
}

/** Saves a few at a time: each is a checkpoint on a node. */
const CONCURRENCY = 4;

/** Hibernates the idle sessions of draining nodes; returns how many it saved. */
export async function hibernateDrainingSessions(deps: {
  directory: Pick<NodeDirectory, "list">;
  leases: Pick<LeaseStore, "listLeases">;
  hibernation: DrainHibernation;
  log: Logger;
  now?: () => number;
}): Promise<number> {
  const draining = new Set(
    deps.directory
      .list()
      .filter((node) => node.state === "draining")
      .map((node) => node.id),
  );
  if (draining.size === 0) return 0;
  const now = (deps.now ?? Date.now)();
  const due = (await deps.leases.listLeases()).filter(
    (lease) =>
      lease.node !== undefined &&
      draining.has(lease.node) &&
      runsASandbox(lease) &&
      deps.hibernation.canHibernate(lease.pool) &&
      !((lease.activeCalls ?? 0) > 0 && (lease.busyUntil ?? 0) > now),
  );
  let saved = 0;
  for (let i = 0; i < due.length; i += CONCURRENCY) {
    const results = await Promise.all(
      due.slice(i, i + CONCURRENCY).map((lease) =>
        deps.hibernation.hibernate({ workspace: lease.workspace, sessionId: lease.sessionId }).then(
          () => {
            deps.log.info(
              { session: lease.sessionId, workspace: lease.workspace, node: lease.node },
              "a draining node's session hibernated: it resumes on another node",
            );
            return 1;
          },
          (error: unknown) => {
            // A call began meanwhile, or the workspace is at its bound: tried again next round.
            deps.log.debug(
              { err: error, session: lease.sessionId },
              "a draining node's session did not hibernate",
            );
            return 0;
          },
        ),
      ),
    );
    saved += results.reduce<number>((sum, one) => sum + one, 0);
  }
  return saved;
}
