/**
 * A gateway session from lease to release. CreateSession runs policy -> admission ->
 * lease -> record, giving back every step it took when a later one fails (the slot, the
 * sandbox). Every way a session ends (DestroySession, idle timeout, maximum lifetime, a
 * dead sandbox) goes through `end`, which exactly one caller wins: a live session's end
 * closes the session inside its sandbox before it returns (so no call forwarded later, from
 * any replica's lease cache, runs in it), and every end releases the slot and queues the
 * sandbox's destruction as a job with retries, so a crash cannot leak it.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import { type Admission, settlement } from "../admission/admission.js";
import { SandpoolError } from "../contract/error-codes.js";
import type { CreateSessionRequest } from "../contract/schemas.js";
import type { SandboxClient } from "../forward/sandbox-client.js";
import type { Resumed, SessionHibernation } from "../hibernate/session-hibernation.js";
import type { JobRunner } from "../jobs/job-runner.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { UsageJournal } from "../metering/usage-journal.js";
import { usageRecord } from "../metering/usage-record.js";
import type { UsageSink } from "../metering/usage-sink.js";
import type { CallUsage, OpenCall } from "../operations/resolved-session.js";
import { imageAllowed } from "../policy/decide-access.js";
import { sessionTimeouts } from "../policy/decide-limits.js";
import { poolServing } from "../policy/decide-pool.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { PolicyService } from "../policy/policy-service.js";
import { enforce } from "../policy/verdict.js";
import type { LeasedSandbox, SandboxPool } from "../pool/sandbox-pool.js";
import type { LeaseStore } from "../store/coordination/lease-store.js";
import {
  HOLD_GRACE_MS,
  type Lease,
  type LeaseEgress,
  type LeaseKey,
  leaseDeadline,
  type SandboxRecord,
} from "../store/coordination/records.js";
import { hibernateIdleSessions } from "./idle-hibernation.js";
import {
  DESTROY_SANDBOX_JOB,
  type EndedSession,
  type EndReason,
  REUSABLE_ENDS,
  SandboxSettlement,
  SETTLE_ENDED_SESSION_JOB,
} from "./sandbox-settlement.js";

/** How long an end waits for the sandbox to close the session inside it. */
const CLOSE_INNER_TIMEOUT_MS = 1_000;
const REAP_BATCH = 100;
const REAP_CONCURRENCY = 8;

/** Ends of a session that may still be served from a lease cache: its sandbox session is closed first. */
const CLOSED_BEFORE_THE_END: ReadonlySet<EndReason> = new Set([
  "destroyed",
  "ended_by_operator",
  "drained",
  "budget_spent",
]);

export interface SessionLifecycleDeps {
  store: LeaseStore;
  pools: SandboxPool;
  admission: Admission;
  policies: PolicyService;
  jobs: JobRunner;
  /** Closes the session inside its sandbox as it ends. */
  sandboxes: Pick<SandboxClient, "closeInnerSession">;
  metrics: GatewayMetrics;
  usage: UsageSink;
  /** Where a call's usage record is journaled before its answer is released (`sandpool serve`). */
  journal?: Pick<UsageJournal, "append">;
  log: Logger;
  /** Hibernation and resume, where this gateway's pools can (src/hibernate/). */
  hibernation?: SessionHibernation;
  now?: () => number;
}

export interface CallOptions {
  /** How long the call may take: it holds the session off idling out that long at most. */
  deadlineMs: number;
  /** Execution time to reserve against the workspace's day (Execute). */
  budget?: { policy: EffectivePolicy; requestedMs: number };
}

export interface CreatedSession {
  lease: Lease;
  policy: EffectivePolicy;
  warm: boolean;
}

export class SessionLifecycle {
  private readonly now: () => number;
  /** What follows an end, off its answer: usage, then reuse or destruction (the settle job). */
  readonly settlement: SandboxSettlement;

  constructor(private readonly deps: SessionLifecycleDeps) {
    this.now = deps.now ?? Date.now;
    this.settlement = new SandboxSettlement(deps);
  }

  /**
   * Leases a session under `policy`, the workspace's policy in force that the pipeline's
   * policy step has checked (the workspace enabled, the image allowed): then the pool serving
   * the image, admission (slot, rate, budget) and the lease.
   */
  async create(
    workspace: string,
    request: CreateSessionRequest,
    policy: EffectivePolicy,
    egress?: LeaseEgress,
  ): Promise<CreatedSession> {
    const image = enforce(imageAllowed(policy, request.image)).image!;
    const pool = enforce(poolServing(this.deps.pools.list(), image, policy)).pool!;
    const timeouts = sessionTimeouts(policy, request);
    const idleTimeoutSeconds = timeouts.idle.value;
    const maxLifetimeSeconds = timeouts.lifetime.value;
    // 144 random bits, URL-safe: unguessable, and unrelated to the container or its session.
    const sessionId = newSessionId();
    // The slot is held from now; a slow lease (a wait for a place, a cold start) must not eat into it.
    const holdUntil =
      this.now() + maxLifetimeSeconds * 1000 + HOLD_GRACE_MS + this.deps.pools.leaseBudgetMs(pool);

    await this.deps.admission.admitSession(policy, sessionId, holdUntil);
    let leased: LeasedSandbox | undefined;
    try {
      // A warm lease takes the sandbox and holds its pool place in the same step.
      leased = await this.deps.pools.lease(pool, {
        workspace,
        until: holdUntil,
        now: this.now(),
        reuse: policy.sandboxReuse,
      });
      // The session's clock starts when it is usable, not when it was asked for.
      const createdAt = this.now();
      const lease: Lease = {
        sessionId,
        workspace,
        pool: pool.name,
        image,
        sandbox: leased.record,
        ...(leased.record.node === undefined ? {} : { node: leased.record.node }),
        createdAt,
        lastActivityAt: createdAt,
        idleTimeoutSeconds,
        maxLifetimeSeconds,
        // The session's own egress narrowing (checked by its handler): every proxy reads it here.
        ...(egress ? { egress } : {}),
      };
      if (!leased.warm) {
        await this.deps.pools.holdMembership(leased.record, { workspace, until: holdUntil, now: this.now() });
      }
      // The session's start record is written with its lease, as durable as it.
      const started = usageRecord(
        {
          workspace,
          sessionId,
          kind: "session_created",
          // The lease travels with the event: if Redis loses it, reconciliation rebuilds it.
          sandboxId: leased.record.sandboxId,
          detail: { image, warm: leased.warm, reused: leased.reused, lease },
        },
        createdAt,
      );
      await this.deps.store.putLease(lease, started);
      return { lease, policy, warm: leased.warm };
    } catch (error) {
      await this.deps.admission.releaseSession(workspace, sessionId);
      if (leased) {
        await this.markRetiring(leased.record);
        await this.deps.jobs.enqueue(DESTROY_SANDBOX_JOB, leased.record);
      }
      throw error;
    } finally {
      // Refill behind the lease, off the request path: after this turn of the event loop,
      // so the answer is written before a sandbox start (a synchronous spawn) can delay it.
      // A lease of the workspace's parked sandbox took nothing warm-up keeps: a session's
      // churn on reused sandboxes does not look at the pool each time (the tick still does).
      if (!leased?.reused) {
        setImmediate(() => {
          this.deps.pools.warm(pool).catch((error) => this.deps.log.error({ err: error }, "warm-up failed"));
        });
      }
    }
  }

  /**
   * The caller's live session. Unknown, ended, expired and other workspaces' sessions are
   * all the same 404: existence is never revealed across tenants.
   */
  async resolve(key: LeaseKey): Promise<Lease> {
    const lease = await this.deps.store.getLease(key);
    if (!lease) throw notFound();
    if (leaseDeadline(lease) <= this.now()) {
      await this.end(key, "expired");
      throw notFound();
    }
    return lease.hibernation ? (await this.resumeHibernated(key)).lease : lease;
  }

  /**
   * Hibernates the session (an operator's, or its idle time's): its lease as it is then.
   * 409 `session.not_hibernatable` where this gateway cannot (src/hibernate/).
   */
  hibernate(key: LeaseKey): Promise<Lease> {
    if (!this.deps.hibernation) {
      throw new SandpoolError("session.not_hibernatable", "this gateway's sessions cannot hibernate");
    }
    return this.deps.hibernation.hibernate(key);
  }

  /** A hibernated session brought back (the one resume every waiting call shares). */
  private resumeHibernated(key: LeaseKey): Promise<Resumed> {
    if (!this.deps.hibernation) {
      throw new SandpoolError(
        "session.resume_failed",
        "the hibernated session could not be resumed: this gateway serves no pool that can restore it",
        { retryAfterSeconds: 5 },
      );
    }
    return this.deps.hibernation.resume(key);
  }

  /** Records activity that is not a call (a handle read). */
  async touch(key: LeaseKey): Promise<void> {
    await this.deps.store.touchLease(key, this.now());
  }

  /**
   * Begins a call on the caller's live session, in one step of the store: the lease is
   * resolved (the same 404 as `resolve`), the budget asked for reserved (429 when none
   * remains), and the session marked busy so it cannot idle out while the call runs (up to
   * `deadlineMs`), however many other calls start and end meanwhile. The call must be ended
   * (`OpenCall.end`), once, whatever happens.
   */
  async beginCall(key: LeaseKey, options: CallOptions): Promise<OpenCall> {
    // A hibernated session is resumed, then the call begins on its new sandbox (a session
    // hibernated again in between, by an operator, is resumed again).
    let interpreterRestarted = false;
    for (let attempt = 0; ; attempt++) {
      const call = await this.beginOnce(key, options);
      if (call !== "hibernated") return interpreterRestarted ? { ...call, interpreterRestarted } : call;
      if (attempt === 2) {
        throw new SandpoolError("session.resume_failed", "the session was hibernated again as it resumed", {
          retryAfterSeconds: 1,
        });
      }
      interpreterRestarted ||= (await this.resumeHibernated(key)).interpreterRestarted;
    }
  }

  private async beginOnce(key: LeaseKey, options: CallOptions): Promise<OpenCall | "hibernated"> {
    const now = this.now();
    const { budget } = options;
    const request = budget && this.deps.admission.execRequest(budget.policy, budget.requestedMs, now);
    const asked = performance.now();
    const started = await this.deps.store.beginCall(key, {
      now,
      busyUntil: now + options.deadlineMs,
      budget: request,
    });
    this.deps.metrics.callBeginDuration.observe((performance.now() - asked) / 1000);
    if (started.outcome === "expired") {
      await this.end(key, "expired");
      throw notFound();
    }
    if (started.outcome === "gone") throw notFound();
    if (started.outcome === "hibernated") return "hibernated";
    if (started.outcome === "budget_spent") throw this.deps.admission.budgetSpent(budget!.policy);
    if (started.outcome !== "started") throw notFound();
    const reservation = request && {
      workspace: key.workspace,
      day: request.day,
      grantedMs: started.grantedMs,
    };
    let ended = false;
    const ending = (measuredMs = 0, used?: CallUsage): (() => Promise<number>) => {
      if (ended) return async () => 0;
      ended = true;
      const settled = reservation ? settlement(reservation, measuredMs) : { chargedMs: 0, refundMs: 0 };
      const endedAt = this.now();
      // The call's usage is written with its end, in the same step (the usage backlog), and
      // journaled first: the end is written behind, and a replica killed meanwhile leaves
      // the record in its journal for another to replay (src/metering/usage-journal.ts).
      const usage = used && {
        workspace: key.workspace,
        sessionId: key.sessionId,
        kind: used.kind,
        ...(used.tool === undefined ? {} : { tool: used.tool }),
        quantity: used.quantity ?? settled.chargedMs,
        eventId: randomUUID(),
      };
      const record = usage && usageRecord(usage, endedAt);
      const journaled = record === undefined ? undefined : this.deps.journal?.append(key.workspace, record);
      return async () => {
        try {
          await this.deps.store.endCall(key, {
            now: endedAt,
            refund:
              reservation && settled.refundMs > 0
                ? { day: reservation.day, milliseconds: settled.refundMs }
                : undefined,
            ...(record === undefined ? {} : { usage: record }),
          });
          return settled.chargedMs;
        } catch (error) {
          // busyUntil still bounds how long the session counts as busy; the reservation
          // stays charged in full, the safe side. The usage goes on its own, with its id
          // (journaled again by the sink): if the end was written after all, the record counts once.
          this.deps.log.warn({ err: error, session: key.sessionId }, "could not record the end of a call");
          if (usage) this.deps.usage.record(usage);
          return reservation?.grantedMs ?? 0;
        } finally {
          journaled?.applied();
        }
      };
    };
    return {
      lease: started.lease,
      grantedMs: started.grantedMs,
      end: (measuredMs, used) => ending(measuredMs, used)(),
      ending,
    };
  }
  /** Running sessions (an operator's view): every workspace's, or one workspace's. */
  async list(workspace?: string): Promise<Lease[]> {
    const leases = await this.deps.store.listLeases();
    return workspace === undefined ? leases : leases.filter((lease) => lease.workspace === workspace);
  }

  /** A running session by id for an operator: in `workspace` when given, else in any. */
  async find(sessionId: string, workspace?: string): Promise<Lease | undefined> {
    if (workspace !== undefined) return this.deps.store.getLease({ workspace, sessionId });
    return (await this.deps.store.listLeases()).find((lease) => lease.sessionId === sessionId);
  }

  /**
   * Ends a session; false when it was already gone (someone else ended it). Answers as soon
   * as the session is gone for good: its lease taken, its inner session closed (or, when no
   * other replica holds a copy of the lease, its close sent), its slot freed and the rest queued as a durable job (`settleEnded`: usage, the last CPU charge,
   * then the sandbox reused or destroyed), so a DeleteSession waits for no container.
   */
  async end(key: LeaseKey, reason: EndReason): Promise<boolean> {
    const endedAt = this.now();
    // The session's end record is written as its lease is taken, by the one taker.
    const endRecord = usageRecord(
      { workspace: key.workspace, sessionId: key.sessionId, kind: "session_ended", detail: { reason } },
      endedAt,
    );
    const taken = await this.deps.store.takeLease(key, { record: endRecord, now: endedAt });
    if (!taken) return false;
    const { copiedElsewhere, ...lease } = taken;
    // A hibernated session has no sandbox to close (one being saved or restored is the
    // saver's or restorer's to give up: their next step finds the lease gone).
    const live = lease.hibernation === undefined;
    // From now, not from when the settle job gets to it: a lease of the workspace meanwhile
    // waits for this sandbox's scrub rather than cold-starting.
    if (live && REUSABLE_ENDS.has(reason)) this.deps.pools.expectRecycle(lease.sandbox, lease.workspace);
    // Sent at once for a live session, so its calls in flight stop now, not at the scrub.
    // Dead or lost sandboxes are not waited on (nor is the reaper, by one that will not answer).
    const closing =
      live && CLOSED_BEFORE_THE_END.has(reason)
        ? this.deps.sandboxes.closeInnerSession(
            lease.sandbox.endpoint,
            lease.sandbox.innerSessionId,
            CLOSE_INNER_TIMEOUT_MS,
          )
        : undefined;
    await Promise.all([
      // At once: the place frees with the destroy below, and a lease at the pool's cap meanwhile waits for it.
      live ? this.markRetiring(lease.sandbox) : undefined,
      // Awaited only when another replica may serve a call from its cached copy of the lease
      // until the end's broadcast reaches it: the sandbox must refuse that call once the end
      // is answered. This replica dropped its own copy as it took the lease.
      copiedElsewhere ? closing : undefined,
      this.deps.admission.releaseSession(lease.workspace, lease.sessionId),
      // Beside the rest, not after: the job scrubs or destroys the sandbox, which ends its inner
      // session too, so a close still on its way finds nothing to close (and closes nothing
      // of a later session: the scrub gives that one a new inner id).
      this.deps.jobs.enqueue<EndedSession>(SETTLE_ENDED_SESSION_JOB, { lease, reason }),
    ]);
    this.deps.metrics.sessionsEnded.inc({ reason });
    this.deps.log.info({ session: lease.sessionId, workspace: lease.workspace, reason }, "session ended");
    return true;
  }

  /**
   * Marks a sandbox about to be destroyed as freeing its place. The mark only spares a
   * waiting lease a 503: failing to set it must not keep the sandbox alive.
   */
  private async markRetiring(record: SandboxRecord): Promise<void> {
    await this.deps.pools.markRetiring(record).catch((error: unknown) => {
      this.deps.log.warn({ err: error, sandbox: record.sandboxId }, "could not mark a sandbox as retiring");
    });
  }

  /** Hibernates the sessions idle for their workspace's policy (src/session/idle-hibernation.ts). */
  hibernateIdle(): Promise<number> {
    const { hibernation } = this.deps;
    if (!hibernation) return Promise.resolve(0);
    return hibernateIdleSessions({ ...this.deps, hibernation, now: this.now() });
  }

  /** Ends every session past its idle timeout or maximum lifetime. */
  async reap(): Promise<number> {
    let ended = 0;
    for (;;) {
      const due = await this.deps.store.dueLeases(this.now(), REAP_BATCH);
      // A few at a time: each end may wait seconds for the sandbox's usage (docker stats).
      for (let i = 0; i < due.length; i += REAP_CONCURRENCY) {
        const results = await Promise.all(
          due.slice(i, i + REAP_CONCURRENCY).map((key) => this.end(key, "expired")),
        );
        ended += results.filter(Boolean).length;
      }
      if (due.length < REAP_BATCH) return ended;
    }
  }
}

/** Random and unguessable; never starting with "-", which a command line would read as an option. */
function newSessionId(): string {
  for (;;) {
    const id = randomBytes(18).toString("base64url");
    if (!id.startsWith("-")) return id;
  }
}

function notFound(): SandpoolError {
  return new SandpoolError("session.not_found", "no such session");
}
