/**
 * Hibernating a session and resuming it (docs/hibernate.md). A session hibernates when it
 * has no call in flight: its lease is claimed (`saving`, so no call starts meanwhile and no
 * replica serves one from a copy), its sandbox checkpointed into the store and removed, its
 * pool place freed; the session keeps its id, workspace, slot, deadlines and policy. Any
 * call then resumes it (`resume`): one restore per session, the callers of this replica
 * waiting for it and other replicas' callers for its claim to end.
 *
 * Faults lose nothing: a refused or failed save leaves the session running (a sandbox that
 * gVisor ended in its checkpoint ends the session); a failed restore puts the session back
 * to `saved` with its checkpoint, and answers 503 for a retry; a replica killed midway leaves
 * a claim that lapses, and the next caller takes it over (`saving`: the checkpoint is kept if
 * it was committed, else the session runs on where it was).
 */
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { UsageSink } from "../metering/usage-sink.js";
import { SandboxLostInCheckpointError } from "../runtime/sandbox-checkpoints.js";
import type { LeaseStore } from "../store/coordination/lease-store.js";
import {
  type CheckpointRecord,
  claimHeld,
  HOLD_GRACE_MS,
  type Lease,
  type LeaseKey,
  type MemberHold,
  type SandboxRecord,
} from "../store/coordination/records.js";
import { refusalError } from "./checkpoint-room.js";
import { CheckpointBoundError, type CheckpointBounds } from "./checkpoint-store.js";
import { CLAIM_MS, CLAIM_POLL_MS, keepClaim, newClaimId } from "./hibernation-claim.js";
import type { HibernationSandboxes } from "./hibernation-sandboxes.js";
import { definiteSaveFailure, saveRefusalOf } from "./save-failure.js";
import { SingleFlight } from "./single-flight.js";

/** How long an idle session the store refused for want of room waits before it is tried again (the refusal's Retry-After). */
const REFUSED_RETRY_MS = 60_000;

export interface SessionHibernationDeps {
  leases: LeaseStore;
  /** Where the sandboxes are saved and restored: this host's pools, or the nodes (an edge). */
  sandboxes: HibernationSandboxes;
  /** The workspace's bounds on what it keeps hibernated (policy maxHibernatedSessions). */
  boundsOf(workspace: string): Promise<CheckpointBounds>;
  /** The sandbox's usage recorded and its last CPU charged, before the save (SandboxSettlement.settleSandbox). */
  settleSandbox(lease: Lease): Promise<void>;
  /** Called when the session's sandbox was lost in a failed save: the session ends. */
  sandboxLost(key: LeaseKey): Promise<void>;
  metrics: GatewayMetrics;
  /** Each checkpoint saved is a usage record of its bytes. */
  usage: UsageSink;
  log: Logger;
  now?: () => number;
}

/** What a resume gives the call that waited for it. */
export interface Resumed {
  lease: Lease;
  /** A files checkpoint: the interpreter started anew (the call's stderr says so). */
  interpreterRestarted: boolean;
}

export class SessionHibernation {
  private readonly now: () => number;
  private readonly resumes = new SingleFlight<Resumed>();
  private readonly saves = new SingleFlight<Lease>();

  constructor(private readonly deps: SessionHibernationDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Whether sessions of `poolName` can hibernate here. */
  /** Whether an idle session should hibernate now (its pool can, and where it runs allows it). */
  hibernatesIdle(lease: Lease): boolean {
    // A session the store refused for want of room is not tried again at every round: each
    // try settles its sandbox's usage first, and a full store or disk stays so for a while. A
    // workspace at its own bound is tried at the next round: its room comes back as soon as
    // one of its sessions resumes or ends.
    const refused = lease.hibernationRefused;
    if (refused?.code === "capacity.checkpoint_space" && this.now() - refused.at < REFUSED_RETRY_MS)
      return false;
    return this.canHibernate(lease.pool) && (this.deps.sandboxes.hibernatesIdle?.(lease) ?? true);
  }

  canHibernate(poolName: string): boolean {
    const pool = this.deps.sandboxes.pool(poolName);
    return pool !== undefined && this.deps.sandboxes.kindOf(pool) !== undefined;
  }

  /**
   * Hibernates the session; its lease as it is then (already hibernated: as it was). 404
   * for no such session, 409 while a call is in flight or when its pool cannot hibernate,
   * 429 at the workspace's bound. The session keeps running on any failure but a sandbox
   * gVisor ended midway (the session then ends).
   */
  hibernate(key: LeaseKey): Promise<Lease> {
    return this.saves.run(flightKey(key), () => this.save(key));
  }

  private async save(key: LeaseKey): Promise<Lease> {
    const lease = await this.deps.leases.getLease(key);
    if (!lease) throw notFound();
    if (lease.hibernation) return lease;
    const pool = this.deps.sandboxes.pool(lease.pool);
    const kind = pool && this.deps.sandboxes.kindOf(pool);
    if (!pool || !kind) {
      throw new SandpoolError(
        "session.not_hibernatable",
        `sessions of the '${lease.pool}' pool cannot hibernate`,
      );
    }
    const claimId = newClaimId();
    const checkpoint: CheckpointRecord = {
      kind,
      bytes: 0,
      sandboxId: lease.sandbox.sandboxId,
      sandboxSessionId: lease.sandbox.innerSessionId,
      pool: pool.name,
      hibernatedAt: this.now(),
      ...optional("node", this.deps.sandboxes.holderOf(lease)),
    };
    const claimed = await this.deps.leases.stepHibernation(key, {
      now: this.now(),
      from: ["running"],
      to: { phase: "saving", claimId, claimUntil: this.now() + CLAIM_MS, checkpoint },
      requireIdle: true,
    });
    if (claimed.outcome === "gone") throw notFound();
    if (claimed.outcome === "busy") {
      throw new SandpoolError(
        "session.busy",
        "the session has a call in flight; hibernate it once it is idle",
      );
    }
    if (claimed.outcome === "elsewhere") return claimed.lease;
    const began = performance.now();
    let saved: CheckpointRecord;
    const renewal = keepClaim(this.deps.leases, this.now, key, { phase: "saving", claimId, checkpoint });
    try {
      // The CPU it burned so far is charged now: the restored sandbox's counter starts anew.
      await this.deps.settleSandbox(lease);
      const stored = await this.deps.sandboxes.save({
        key,
        lease,
        pool,
        bounds: await this.deps.boundsOf(key.workspace),
      });
      saved = { ...checkpoint, kind: stored.kind, bytes: stored.bytes, hibernatedAt: this.now() };
    } catch (error) {
      // A failure that refuses nothing for sure (a node's answer lost or late, a step after
      // the commit that threw) may hide a save that went through: the committed checkpoint
      // then stands, as when another replica takes a save over (its size unknown here).
      if (!definiteSaveFailure(error) && (await this.committedAnyway(key, lease, checkpoint))) {
        saved = { ...checkpoint, hibernatedAt: this.now() };
        renewal.stop();
        return this.saved(key, lease, claimId, saved, began);
      }
      this.deps.metrics.hibernations.inc({ outcome: "failed" });
      const answer =
        error instanceof CheckpointBoundError ? refusalError(error.reason, error.message, error) : error;
      const refused = saveRefusalOf(answer, this.now());
      // Running on. A refusal at a bound came before anything touched the sandbox (the store's
      // begin); after any other failure its server may have listened again with the code
      // running (records.ts), so it is never reused.
      await this.deps.leases
        .stepHibernation(key, {
          now: this.now(),
          from: ["saving"],
          claimId,
          to: undefined,
          ...(refused ? { refused } : { sandbox: { ...lease.sandbox, neverReuse: true as const } }),
        })
        .catch(() => undefined);
      if (refused) {
        this.deps.log.info(
          { session: key.sessionId, workspace: key.workspace, code: refused.code, reason: refused.message },
          "hibernation refused: the session keeps running",
        );
      }
      if (error instanceof SandboxLostInCheckpointError) {
        await this.deps.sandboxLost(key);
        throw new SandpoolError("sandbox.unreachable", "the session's sandbox was lost while it was saved", {
          cause: error,
        });
      }
      throw answer;
    } finally {
      renewal.stop();
    }
    return this.saved(key, lease, claimId, saved, began);
  }

  /** Whether a save that failed committed its checkpoint all the same; its sandbox then goes. */
  private async committedAnyway(key: LeaseKey, lease: Lease, checkpoint: CheckpointRecord): Promise<boolean> {
    const committed = await this.deps.sandboxes.committed(key, checkpoint).catch(() => false);
    if (committed) await this.deps.sandboxes.retire(lease.sandbox).catch(() => undefined);
    return committed;
  }

  /** The save's last step: the session is hibernated, its checkpoint metered. */
  private async saved(
    key: LeaseKey,
    lease: Lease,
    claimId: string,
    saved: CheckpointRecord,
    began: number,
  ): Promise<Lease> {
    const done = await this.deps.leases.stepHibernation(key, {
      now: this.now(),
      from: ["saving"],
      claimId,
      to: { phase: "saved", checkpoint: saved },
    });
    if (done.outcome !== "stepped") {
      // Ended meanwhile (destroyed, expired): nobody will resume it.
      await this.deps.sandboxes.deleteCheckpoint(key, saved).catch(() => undefined);
      throw notFound();
    }
    this.deps.metrics.hibernations.inc({ outcome: "saved" });
    this.deps.metrics.hibernateDuration.observe({ kind: saved.kind }, (performance.now() - began) / 1000);
    this.deps.metrics.checkpointBytes.observe({ kind: saved.kind }, saved.bytes);
    this.deps.usage.record({
      workspace: key.workspace,
      sessionId: key.sessionId,
      kind: "checkpoint_saved",
      quantity: saved.bytes,
      sandboxId: lease.sandbox.sandboxId,
      detail: { kind: saved.kind },
    });
    this.deps.log.info(
      { session: key.sessionId, workspace: key.workspace, kind: saved.kind, bytes: saved.bytes },
      "session hibernated",
    );
    return done.lease;
  }

  /**
   * Brings a hibernated session back and returns its running lease: one restore per session
   * on this replica; a save or restore under way elsewhere is waited for. 404 when the
   * session is gone; 503 `session.resume_failed` (the checkpoint kept) when it cannot be.
   */
  resume(key: LeaseKey): Promise<Resumed> {
    return this.resumes.run(flightKey(key), () => this.restore(key));
  }

  private async restore(key: LeaseKey): Promise<Resumed> {
    for (;;) {
      const lease = await this.deps.leases.getLease(key);
      if (!lease) throw notFound();
      const hibernation = lease.hibernation;
      if (!hibernation) return { lease, interpreterRestarted: false };
      if (claimHeld(lease, this.now())) {
        // Another replica is saving or restoring it (or this one's save is still under way).
        await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
        continue;
      }
      if (hibernation.phase === "saving") {
        await this.takeOverSave(key, lease);
        continue;
      }
      return this.restoreSaved(key, lease, hibernation.checkpoint);
    }
  }

  /**
   * A save whose replica died: the checkpoint was committed (the session is saved, and the
   * sandbox, if it outlived the save, goes), or it was not (the session runs on where it was).
   */
  private async takeOverSave(key: LeaseKey, lease: Lease): Promise<void> {
    const checkpoint = lease.hibernation!.checkpoint;
    const committed = await this.deps.sandboxes.committed(key, checkpoint);
    const stepped = await this.deps.leases.stepHibernation(key, {
      now: this.now(),
      from: ["saving"],
      to: committed ? { phase: "saved", checkpoint } : undefined,
    });
    if (stepped.outcome === "stepped" && committed) {
      await this.deps.sandboxes.retire(lease.sandbox).catch(() => undefined);
    }
  }

  private async restoreSaved(key: LeaseKey, lease: Lease, checkpoint: CheckpointRecord): Promise<Resumed> {
    const pool = this.deps.sandboxes.pool(checkpoint.pool);
    if (!pool) throw resumeFailed(`the '${checkpoint.pool}' pool is not served here`);
    const claimId = newClaimId();
    // A call asked for the resume: it is the session's activity, so the reaper does not end
    // it meanwhile for an idle deadline counted from before it hibernated.
    const claimed = await this.deps.leases.stepHibernation(key, {
      now: this.now(),
      from: ["saved", "restoring"],
      claimId,
      to: { phase: "restoring", claimId, claimUntil: this.now() + CLAIM_MS, checkpoint },
      activity: true,
    });
    if (claimed.outcome === "gone") throw notFound();
    if (claimed.outcome !== "stepped") return this.restore(key);
    const began = performance.now();
    let interpreterRestarted = false;
    let record: SandboxRecord | undefined;
    const renewal = keepClaim(this.deps.leases, this.now, key, { phase: "restoring", claimId, checkpoint });
    try {
      record = await this.deps.sandboxes.restore({
        key,
        lease,
        pool,
        checkpoint,
        hold: this.holdFor(lease),
        name: async (named) => {
          const stepped = await this.deps.leases.stepHibernation(key, {
            now: this.now(),
            from: ["restoring"],
            claimId,
            to: { phase: "restoring", claimId, claimUntil: this.now() + CLAIM_MS, checkpoint },
            sandbox: named,
          });
          if (stepped.outcome !== "stepped") throw notFound();
        },
      });
      if (checkpoint.kind === "files") interpreterRestarted = true;
      // Its server listened again with the code's processes running (records.ts).
      else record = { ...record, neverReuse: true };
    } catch (error) {
      this.deps.metrics.resumes.inc({ outcome: "failed" });
      await this.deps.leases
        .stepHibernation(key, {
          now: this.now(),
          from: ["restoring"],
          claimId,
          to: { phase: "saved", checkpoint },
        })
        .catch(() => undefined);
      this.deps.log.warn({ err: error, session: key.sessionId }, "could not resume a hibernated session");
      renewal.stop();
      throw error instanceof SandpoolError
        ? error
        : resumeFailed("its sandbox could not be restored", 1, error);
    }
    renewal.stop();
    // Its last activity is its resume (a restore can take seconds).
    const running = await this.deps.leases.stepHibernation(key, {
      now: this.now(),
      from: ["restoring"],
      claimId,
      to: undefined,
      sandbox: record,
      activity: true,
    });
    if (running.outcome !== "stepped") {
      // Ended while it was restored: the new sandbox serves nobody.
      await this.deps.sandboxes.retire(record).catch(() => undefined);
      throw notFound();
    }
    await this.deps.sandboxes.deleteCheckpoint(key, checkpoint).catch((error: unknown) => {
      this.deps.log.warn(
        { err: error, session: key.sessionId },
        "could not delete a resumed session's checkpoint",
      );
    });
    this.deps.metrics.resumes.inc({ outcome: "resumed" });
    this.deps.metrics.resumeDuration.observe({ kind: checkpoint.kind }, (performance.now() - began) / 1000);
    this.deps.log.info(
      { session: key.sessionId, workspace: key.workspace, kind: checkpoint.kind },
      "session resumed",
    );
    return { lease: running.lease, interpreterRestarted };
  }

  /**
   * What a crash leaves in the checkpoint store goes: directories begun and never committed,
   * and committed checkpoints no hibernated session names (its session ended, or resumed,
   * while the replica that would have deleted it died). Returns how many were removed.
   */
  reconcileCheckpoints(): Promise<number> {
    return this.deps.sandboxes.reconcile();
  }

  /** Deletes an ended session's checkpoint, if it had one. */
  async forget(lease: Lease): Promise<void> {
    if (!lease.hibernation) return;
    await this.deps.sandboxes.deleteCheckpoint(
      { workspace: lease.workspace, sessionId: lease.sessionId },
      lease.hibernation.checkpoint,
    );
  }

  /** The restored sandbox's place is held as long as the session's slot. */
  private holdFor(lease: Lease): MemberHold {
    return {
      workspace: lease.workspace,
      until: lease.createdAt + lease.maxLifetimeSeconds * 1000 + HOLD_GRACE_MS,
      now: this.now(),
    };
  }
}

const flightKey = (key: LeaseKey) => `${key.workspace}\u0000${key.sessionId}`;
const optional = <K extends string, V>(name: K, value: V | undefined) =>
  (value === undefined ? {} : { [name]: value }) as Partial<Record<K, V>>;

function notFound(): SandpoolError {
  return new SandpoolError("session.not_found", "no such session");
}

function resumeFailed(why: string, retryAfterSeconds = 1, cause?: unknown): SandpoolError {
  return new SandpoolError("session.resume_failed", `the hibernated session could not be resumed: ${why}`, {
    retryAfterSeconds,
    ...(cause === undefined ? {} : { cause }),
  });
}
