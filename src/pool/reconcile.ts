/**
 * Reconciliation: the runtime is the truth for sandboxes, the store for leases and the
 * idle pool. Run at start-up and periodically, it brings the two back together:
 * - a sandbox the store does not know (no lease, not idle, not being started) serving a
 *   session whose start was recorded durably and never ended (Redis lost its state): its
 *   lease and slot are rebuilt, with a fresh idle period;
 * - any other sandbox the store does not know is an orphan, left by a crashed gateway:
 *   destroyed;
 * - a lease whose sandbox is gone is ended (its slot released);
 * - an idle or parked record whose sandbox is gone is dropped from the pool;
 * - a sandbox a replica was starting or handing out, whose in-flight mark lapsed (the replica
 *   died), has its place freed and is destroyed at once (src/pool/reclaim-in-flight.ts).
 * Other sandboxes younger than a grace period are left alone, so a start in progress on
 * another replica is never mistaken for an orphan.
 */
import type { Logger } from "pino";
import {
  PartialListError,
  type PoolSpec,
  type RuntimeSandbox,
  type SandboxRuntime,
} from "../runtime/sandbox-runtime.js";
import type { AdmissionStore } from "../store/coordination/admission-store.js";
import type { LeaseStore } from "../store/coordination/lease-store.js";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";
import {
  HOLD_GRACE_MS,
  type Lease,
  type LeaseKey,
  leaseDeadline,
  runsASandbox,
} from "../store/coordination/records.js";
import { reclaimInFlight } from "./reclaim-in-flight.js";

export interface ReconcileDeps {
  runtime: SandboxRuntime;
  store: LeaseStore & PoolLedger & Pick<AdmissionStore, "acquireSlot">;
  pools: { list(): PoolSpec[] };
  /** Ends the session of a sandbox that is gone (the session layer's `end`). */
  sessions: { end(key: LeaseKey, reason: "sandbox_failed"): Promise<boolean> };
  log: Logger;
  /** How old an unknown sandbox must be before it counts as an orphan. */
  orphanGraceMs: number;
  /** The lease of the open session recorded on a sandbox, if any (from usage records). */
  recoverLease?: (sandboxId: string) => Promise<unknown | undefined>;
  now?: () => number;
}

export interface ReconcileReport {
  leasesRebuilt: number;
  orphansDestroyed: number;
  leasesEnded: number;
  idleDropped: number;
  /** Places freed of sandboxes a dead replica was starting or handing out. */
  inFlightReclaimed: number;
}

/** The report of a reconciliation with nothing to compare (an edge: its nodes reconcile their own). */
export const NOTHING_RECONCILED: ReconcileReport = Object.freeze({
  leasesRebuilt: 0,
  orphansDestroyed: 0,
  leasesEnded: 0,
  idleDropped: 0,
  inFlightReclaimed: 0,
});

/** What the runtime reports; engines that are away count as holding nothing. */
async function listReachable(deps: ReconcileDeps): Promise<RuntimeSandbox[]> {
  try {
    const listed = await deps.runtime.list();
    // Only a complete listing says what is gone from the host.
    await deps.runtime.tidy?.(listed);
    return listed;
  } catch (error) {
    if (!(error instanceof PartialListError)) throw error;
    deps.log.warn({ err: error }, "reconciling without the engines that do not answer: their sessions end");
    return error.partial;
  }
}

export async function reconcile(deps: ReconcileDeps): Promise<ReconcileReport> {
  const now = (deps.now ?? Date.now)();
  const report: ReconcileReport = {
    leasesRebuilt: 0,
    orphansDestroyed: 0,
    leasesEnded: 0,
    idleDropped: 0,
    inFlightReclaimed: 0,
  };
  const listed = await listReachable(deps);
  const runningIds = new Set(listed.filter((s) => s.running !== false).map((sandbox) => sandbox.sandboxId));

  const known = new Set<string>();
  const leased = new Set<string>();
  for (const lease of await deps.store.listLeases()) {
    known.add(lease.sandbox.sandboxId);
    leased.add(lease.sandbox.sandboxId);
    // A hibernated session has no container (one being saved or restored is its claimant's).
    if (runsASandbox(lease) && !runningIds.has(lease.sandbox.sandboxId)) {
      if (
        await deps.sessions.end({ workspace: lease.workspace, sessionId: lease.sessionId }, "sandbox_failed")
      ) {
        report.leasesEnded++;
      }
    }
  }
  const reclaimed = new Set<string>();
  for (const pool of deps.pools.list()) {
    const idleIds = new Set<string>();
    for (const idle of await deps.store.listIdle(pool.name)) {
      known.add(idle.sandboxId);
      idleIds.add(idle.sandboxId);
      if (!runningIds.has(idle.sandboxId) && (await deps.store.takeIdle(pool.name, idle.sandboxId))) {
        await deps.store.removeMember(pool.name, idle.sandboxId);
        report.idleDropped++;
      }
    }
    // Parked for their workspace's next session (src/pool/sandbox-reuse.ts): idle too.
    for (const parked of await deps.store.listParked(pool.name)) {
      known.add(parked.sandboxId);
      idleIds.add(parked.sandboxId);
      if (!runningIds.has(parked.sandboxId) && (await deps.store.takeParked(pool.name, parked.sandboxId))) {
        await deps.store.removeMember(pool.name, parked.sandboxId);
        report.idleDropped++;
      }
    }
    const seen = { leased, idle: idleIds };
    for (const id of await reclaimInFlight(deps.store, pool.name, seen, now, deps.log)) reclaimed.add(id);
    report.inFlightReclaimed = reclaimed.size;
    // Members that are neither leased nor idle are being started (or handed out) by some replica.
    for (const member of await deps.store.listMembers(pool.name, now)) known.add(member);
  }

  for (const sandbox of listed) {
    if (reclaimed.has(sandbox.sandboxId)) {
      // No one will start it further nor hand it out: no grace to wait.
      deps.log.warn({ sandbox: sandbox.sandboxId, pool: sandbox.pool }, "destroying a reclaimed sandbox");
      await deps.runtime.destroy(sandbox.runtimeId);
      report.orphansDestroyed++;
      continue;
    }
    // Known and running: fine. Known but exited: its lease or idle record was just ended
    // above, and its container is removed here like any orphan.
    if (known.has(sandbox.sandboxId) && sandbox.running !== false) continue;
    if (sandbox.running !== false && (await rebuildLease(deps, sandbox, now))) {
      report.leasesRebuilt++;
      continue;
    }
    if (sandbox.createdAt !== undefined && now - sandbox.createdAt < deps.orphanGraceMs) continue;
    deps.log.warn({ sandbox: sandbox.sandboxId, pool: sandbox.pool }, "destroying an orphaned sandbox");
    await deps.runtime.destroy(sandbox.runtimeId);
    await deps.store.removeMember(sandbox.pool, sandbox.sandboxId);
    report.orphansDestroyed++;
  }
  if (Object.values(report).some((count) => count > 0)) {
    deps.log.info(report, "reconciled the runtime with the store");
  }
  return report;
}

/** Puts back the lease, slot and pool place of a session Redis forgot; false if there is none. */
async function rebuildLease(deps: ReconcileDeps, sandbox: RuntimeSandbox, now: number): Promise<boolean> {
  const recorded = (await deps.recoverLease?.(sandbox.sandboxId)) as Lease | undefined;
  if (!recorded || recorded.sandbox?.sandboxId !== sandbox.sandboxId) return false;
  // Nothing is known of its activity since: it gets a fresh idle period, never a longer life.
  const lease: Lease = { ...recorded, lastActivityAt: now, activeCalls: 0, busyUntil: undefined };
  const key = { workspace: lease.workspace, sessionId: lease.sessionId };
  if (leaseDeadline(lease) <= now) return false;
  const holdUntil = lease.createdAt + lease.maxLifetimeSeconds * 1000 + HOLD_GRACE_MS;
  await deps.store.putLease(lease);
  // The session exists already: its slot is restored whatever the limit says now.
  await deps.store.acquireSlot(key.workspace, key.sessionId, Number.MAX_SAFE_INTEGER, holdUntil, now);
  await deps.store.addMember(lease.pool, sandbox.sandboxId, Number.MAX_SAFE_INTEGER, holdUntil, now);
  deps.log.warn(
    { session: lease.sessionId, workspace: lease.workspace },
    "rebuilt a lease the store had lost",
  );
  return true;
}
