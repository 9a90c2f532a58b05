/**
 * Reconciliation: the runtime is the truth for sandboxes, the store for leases and the
 * idle pool. Run at start-up and periodically, it brings the two back together:
 * - a sandbox the store does not know (no lease, not idle, not being started) is an
 *   orphan, left by a crashed gateway or a Redis that lost its state: destroyed;
 * - a lease whose sandbox is gone is ended (its slot released);
 * - an idle record whose sandbox is gone is dropped from the pool.
 * Sandboxes younger than a grace period are left alone, so a start in progress on another
 * replica is never mistaken for an orphan.
 */
import type { Logger } from "pino";
import { PartialListError, type RuntimeSandbox, type SandboxRuntime } from "../runtime/sandbox-runtime.js";
import type { CoordinationStore } from "../store/coordination/coordination-store.js";
import type { PoolManager } from "./pool-manager.js";
import type { SessionLifecycle } from "./session-lifecycle.js";

export interface ReconcileDeps {
  runtime: SandboxRuntime;
  store: CoordinationStore;
  pools: PoolManager;
  sessions: SessionLifecycle;
  log: Logger;
  /** How old an unknown sandbox must be before it counts as an orphan. */
  orphanGraceMs: number;
  now?: () => number;
}

export interface ReconcileReport {
  orphansDestroyed: number;
  leasesEnded: number;
  idleDropped: number;
}

/** What the runtime reports; engines that are away count as holding nothing. */
async function listReachable(deps: ReconcileDeps): Promise<RuntimeSandbox[]> {
  try {
    return await deps.runtime.list();
  } catch (error) {
    if (!(error instanceof PartialListError)) throw error;
    deps.log.warn({ err: error }, "reconciling without the engines that do not answer: their sessions end");
    return error.partial;
  }
}

export async function reconcile(deps: ReconcileDeps): Promise<ReconcileReport> {
  const now = (deps.now ?? Date.now)();
  const report: ReconcileReport = { orphansDestroyed: 0, leasesEnded: 0, idleDropped: 0 };
  const listed = await listReachable(deps);
  const runningIds = new Set(listed.filter((s) => s.running !== false).map((sandbox) => sandbox.sandboxId));

  const known = new Set<string>();
  for (const lease of await deps.store.listLeases()) {
    known.add(lease.sandbox.sandboxId);
    if (!runningIds.has(lease.sandbox.sandboxId)) {
      if (
        await deps.sessions.end({ workspace: lease.workspace, sessionId: lease.sessionId }, "sandbox_failed")
      ) {
        report.leasesEnded++;
      }
    }
  }
  for (const pool of deps.pools.list()) {
    for (const idle of await deps.store.listIdle(pool.name)) {
      known.add(idle.sandboxId);
      if (!runningIds.has(idle.sandboxId) && (await deps.store.takeIdle(pool.name, idle.sandboxId))) {
        await deps.store.removeMember(pool.name, idle.sandboxId);
        report.idleDropped++;
      }
    }
    // Members that are neither leased nor idle are being started by some replica.
    for (const member of await deps.store.listMembers(pool.name, now)) known.add(member);
  }

  for (const sandbox of listed) {
    // Known and running: fine. Known but exited: its lease or idle record was just ended
    // above, and its container is removed here like any orphan.
    if (known.has(sandbox.sandboxId) && sandbox.running !== false) continue;
    if (sandbox.createdAt !== undefined && now - sandbox.createdAt < deps.orphanGraceMs) continue;
    deps.log.warn({ sandbox: sandbox.sandboxId, pool: sandbox.pool }, "destroying an orphaned sandbox");
    await deps.runtime.destroy(sandbox.runtimeId);
    await deps.store.removeMember(sandbox.pool, sandbox.sandboxId);
    report.orphansDestroyed++;
  }
  if (report.orphansDestroyed + report.leasesEnded + report.idleDropped > 0) {
    deps.log.info(report, "reconciled the runtime with the store");
  }
  return report;
}
