/**
 * The leases on Redis. A lease is one key under its workspace's hash tag
 * (`{ws:W}:lease:S`); its deadline lives in that workspace's index (`{ws:W}:deadlines`)
 * and, while it runs a sandbox, since when it has been quiet in another (`{ws:W}:quiet`,
 * what automatic hibernation reads). Every script that changes a lease moves both in the
 * same step, so they cannot disagree with it, on any replica, whatever crashes; an entry
 * left by a lease key that aged out is dropped by the next read that finds it gone. The
 * reaper and the listings find the workspaces from the pools' holder sets (redis-holders.ts).
 *
 * A call's begin (resolve the lease, reserve budget, mark busy, move the deadline) is one
 * script, one round trip, the first time; after that, a session's calls on this replica
 * start from its lease cache (lease-cache.ts) and the workspace's budget allotment
 * (redis-budget-allotments.ts), and the begin is written behind like the end: both ride
 * with the workspace's next script (redis-call-steps.ts). Taking a lease tells every replica
 * to drop its copy (the `leases-ended` broadcast).
 *
 * The listings across workspaces (the reaper's, hibernation's, reconciliation's) are
 * redis-lease-listings.ts; the global index of older deployments, redis-legacy-lease-index.ts.
 */
import { randomBytes } from "node:crypto";
import type { LeaseListings, LeaseStore, TakenLease } from "../lease-store.js";
import {
  type CallEnd,
  type CallMark,
  type CallStart,
  type CallStarted,
  type HibernationStep,
  type HibernationStepped,
  type Lease,
  type LeaseKey,
  leaseDeadline,
  quietSince,
  runsASandbox,
  type SessionEndUsage,
} from "../records.js";
import { LeaseCache } from "./lease-cache.js";
import { BudgetAllotments } from "./redis-budget-allotments.js";
import { CALL_STEPS_SCRIPT, RedisCallSteps } from "./redis-call-steps.js";
import type { RedisCommands } from "./redis-commands.js";
import type { RedisHolders } from "./redis-holders.js";
import { BUDGET_KEY_TTL_MS } from "./redis-keys.js";
import type { LegacyLeaseIndex } from "./redis-legacy-lease-index.js";

/** The broadcast channel of ended sessions: a message is `[workspace, session id]` as JSON. */
export const LEASES_ENDED_CHANNEL = "leases-ended";

/** A lease key outlives the session's own deadline by this much; the reaper ends it first. */
const LEASE_KEY_GRACE_MS = 10 * 60_000;

/** What the begin script's refusals mean. */
const BEGIN_REFUSALS: Record<string, Exclude<CallStarted["outcome"], "started">> = {
  spent: "budget_spent",
  expired: "expired",
  hibernated: "hibernated",
};

const lifetimeEnd = (lease: Lease) => lease.createdAt + lease.maxLifetimeSeconds * 1000;
const leaseEnd = (lease: Lease) => lifetimeEnd(lease) + LEASE_KEY_GRACE_MS;

/** The leases but their listings across workspaces (redis-lease-listings.ts). */
export class RedisLeases implements Omit<LeaseStore, keyof LeaseListings> {
  private readonly steps: RedisCallSteps;
  private readonly cache = new LeaseCache();
  /** This replica among those that may hold a copy of a lease (KEYS.leaseCopies). */
  private readonly replicaId = randomBytes(9).toString("base64url");
  private readonly allotments: BudgetAllotments;

  constructor(
    private readonly commands: RedisCommands,
    private readonly holders: RedisHolders,
    private readonly legacy: LegacyLeaseIndex,
    /** Tells every replica a session ended (LEASES_ENDED_CHANNEL). */
    private readonly announceEnded: (message: string) => Promise<void>,
  ) {
    this.steps = new RedisCallSteps(commands);
    this.allotments = new BudgetAllotments((step) => void this.steps.put(step).catch(() => {}));
  }

  /**
   * Whether the cache may serve calls: only while this replica hears every end (see
   * lease-cache.ts). Set by the store as its subscription comes and goes.
   */
  setCacheCoherent(coherent: boolean): void {
    this.cache.setCoherent(coherent);
  }

  /** A `leases-ended` message from any replica: this replica's copy goes. */
  forgetEnded(message: string): void {
    try {
      const [workspace, sessionId] = JSON.parse(message) as [string, string];
      this.cache.forget({ workspace, sessionId }, Date.now());
    } catch {
      // Not a message of this channel's shape: nothing to drop.
    }
  }

  async putLease(lease: Lease, usage?: string) {
    const { keys } = this.commands;
    const now = Date.now();
    // Findable by the reaper: its workspace is among its pool's holders (a lease made by
    // CreateSession is: leaseIdle or holdMember recorded it a moment ago, on this replica).
    await this.holders.rememberPool(lease.pool, now);
    // Held past the lease's last deadline is enough: by then the reaper has ended it.
    if (!this.holders.holdCovers(lease.pool, lease.workspace, lifetimeEnd(lease), now)) {
      const hold = { workspace: lease.workspace, until: leaseEnd(lease), now };
      await this.commands.script(
        "hold-workspace",
        [keys.holders(lease.pool)],
        [hold.workspace, Math.ceil(hold.until), hold.now],
      );
      this.holders.rememberHold(lease.pool, hold);
    }
    await this.commands.script(
      "put-lease",
      [
        keys.lease(lease),
        keys.deadlines(lease.workspace),
        keys.leaseCopies(lease),
        keys.quiet(lease.workspace),
        keys.usage(lease.workspace),
      ],
      [
        JSON.stringify(lease),
        Math.ceil(leaseEnd(lease)),
        leaseDeadline(lease),
        lease.sessionId,
        this.replicaId,
        runsASandbox(lease) ? quietSince(lease) : "",
        usage ?? "",
      ],
    );
    this.cache.put({ ...lease }, now);
  }

  async getLease(key: LeaseKey) {
    const { redis, keys } = this.commands;
    const raw = await this.commands.read(() => redis.get(keys.lease(key)));
    return raw ? (JSON.parse(raw) as Lease) : undefined;
  }

  async touchLease(key: LeaseKey, now: number, call?: CallMark) {
    const { keys } = this.commands;
    const mark = !call ? ["", ""] : "begin" in call ? ["begin", call.begin] : ["end", ""];
    const raw = await this.commands.script(
      "touch-lease",
      [keys.lease(key), keys.deadlines(key.workspace), keys.quiet(key.workspace)],
      [now, ...mark, key.sessionId],
    );
    return typeof raw === "string" ? (JSON.parse(raw) as Lease) : undefined;
  }

  async beginCall(key: LeaseKey, start: CallStart): Promise<CallStarted> {
    return this.beginFromCache(key, start) ?? this.beginAwaited(key, start);
  }

  /**
   * The call started from this replica's copy of the lease and its budget allotment, its
   * begin written behind; undefined when either cannot serve it (then the begin is awaited).
   */
  private beginFromCache(key: LeaseKey, start: CallStart): CallStarted | undefined {
    const lease = this.cache.usable(key, start.now);
    if (!lease) return undefined;
    const granted = start.budget ? this.allotments.take(key.workspace, start.budget) : 0;
    if (granted === undefined) return undefined;
    if (start.now > lease.lastActivityAt) lease.lastActivityAt = start.now; // the copy's activity
    const begun = this.steps.put({ kind: "begin", key, now: start.now, busyUntil: start.busyUntil });
    // The lease was gone by the time the begin reached Redis (ended on another replica
    // meanwhile): the copy goes; the call itself meets the closed sandbox session.
    begun.then(
      (found) => found || this.cache.drop(key),
      () => this.cache.drop(key),
    );
    return { outcome: "started", lease, grantedMs: granted };
  }

  private async beginAwaited(key: LeaseKey, start: CallStart): Promise<CallStarted> {
    const { keys } = this.commands;
    const budget = start.budget;
    // Time this replica holds serves the call when it covers it (a call the lease cache
    // could not serve); else Redis reserves it, with time for later calls besides
    // (redis-budget-allotments.ts).
    const held = budget ? this.allotments.take(key.workspace, budget) : undefined;
    const extraMs = budget && held === undefined ? this.allotments.extraFor(key.workspace, budget) : 0;
    const requestedMs = budget && held === undefined ? Math.max(1, Math.ceil(budget.requestedMs)) : 0;
    // The workspace's steps this replica put off ride with this begin, ahead of it.
    const steps = this.steps.take(key.workspace);
    let reply: [string, string?, string?, number?];
    try {
      reply = (await this.commands.scriptCarryingDeferred(
        CALL_STEPS_SCRIPT,
        [
          ...steps.keys,
          keys.lease(key),
          // Some key of the workspace's slot for both when there is no budget to reserve.
          budget ? keys.budget(key.workspace, budget.day) : keys.slots(key.workspace),
          budget ? keys.cpuDay(key.workspace, budget.day) : keys.slots(key.workspace),
          keys.leaseCopies(key),
        ],
        [
          ...steps.args,
          start.now,
          Math.ceil(start.busyUntil),
          requestedMs + extraMs,
          budget?.limitMs ?? 0,
          BUDGET_KEY_TTL_MS,
          key.sessionId,
          this.replicaId,
        ],
      )) as typeof reply;
    } catch (error) {
      steps.fail(error);
      if (held !== undefined) this.allotments.restore(key.workspace, budget!.day, held);
      throw error;
    }
    const [found, outcome, raw, granted] = reply;
    steps.settle(found);
    if (outcome === "started") {
      const lease = JSON.parse(raw!) as Lease;
      this.cache.put(lease, start.now);
      if (held !== undefined) return { outcome, lease, grantedMs: held };
      const grantedMs = Math.min(Number(granted), requestedMs);
      if (budget) {
        const kept = Number(granted) - grantedMs;
        this.allotments.add(key.workspace, budget, kept, kept === extraMs);
      }
      return { outcome, lease, grantedMs };
    }
    if (held !== undefined) this.allotments.restore(key.workspace, budget!.day, held);
    this.cache.drop(key);
    return { outcome: BEGIN_REFUSALS[outcome ?? ""] ?? "gone" };
  }

  async stepHibernation(key: LeaseKey, step: HibernationStep): Promise<HibernationStepped> {
    // The calls this replica begun or ended and has not written yet count: a step that
    // needs the session idle must see them.
    await this.steps.flush();
    const [outcome, raw] = (await this.commands.script(
      "hibernation-step",
      [
        this.commands.keys.lease(key),
        this.commands.keys.quiet(key.workspace),
        this.commands.keys.deadlines(key.workspace),
      ],
      [
        step.now,
        step.from.join(","),
        step.claimId ?? "",
        step.requireIdle ? "1" : "",
        step.to ? JSON.stringify(step.to) : "",
        step.sandbox ? JSON.stringify(step.sandbox) : "",
        key.sessionId,
        step.activity ? "1" : "",
        step.refused ? JSON.stringify(step.refused) : "",
      ],
    )) as [string, string?];
    if (outcome === "busy" || outcome === "gone") return { outcome };
    const lease = JSON.parse(raw!) as Lease;
    if (outcome !== "stepped") return { outcome: "elsewhere", lease };
    // Without a running sandbox, no replica may serve a call from its copy.
    this.cache.forget(key, Date.now());
    if (lease.hibernation) {
      await this.announceEnded(JSON.stringify([key.workspace, key.sessionId])).catch(() => {});
    }
    return { outcome: "stepped", lease };
  }

  /**
   * Put off until the workspace's next script on this replica, or a moment
   * (redis-call-steps.ts). The call's unused time goes to the workspace's allotment when
   * this replica holds one for its day, else back to Redis with the end.
   */
  endCall(key: LeaseKey, end: CallEnd) {
    this.cache.touch(key, end.now);
    const refund = end.refund;
    const kept = refund !== undefined && this.allotments.keep(key.workspace, refund.day, refund.milliseconds);
    return this.steps.put({
      kind: "end",
      key,
      now: end.now,
      ...(refund && !kept ? { refund } : {}),
      ...(end.usage === undefined ? {} : { usage: end.usage }),
    });
  }

  /** Sends the steps put off (the ends of calls, with their usage) and waits for them. */
  flushCallEnds() {
    return this.steps.flush();
  }

  /** Gives the allotments back, sends the steps put off and waits for them (before the connection closes). */
  flushSteps() {
    this.allotments.returnAll();
    return this.steps.flush();
  }

  async takeLease(key: LeaseKey, ended?: SessionEndUsage): Promise<TakenLease | undefined> {
    const { keys } = this.commands;
    const reply = (await this.commands.script(
      "take-lease",
      [
        keys.lease(key),
        keys.deadlines(key.workspace),
        keys.leaseCopies(key),
        keys.quiet(key.workspace),
        keys.usage(key.workspace),
      ],
      [key.sessionId, ended?.record ?? "", ended?.now ?? 0],
    )) as [string, string, ...string[]] | null;
    await this.legacy.forget(key);
    if (!reply) return undefined;
    this.cache.forget(key, Date.now());
    // Every other replica's copy goes too. Until the message reaches it, a copy could still
    // serve a call: the end closes the sandbox session before it answers when one may exist.
    await this.announceEnded(JSON.stringify([key.workspace, key.sessionId])).catch(() => {});
    const [raw, known, ...copies] = reply;
    const lease = JSON.parse(raw) as Lease;
    const elsewhere = known !== "1" || copies.some((replica) => replica !== this.replicaId);
    return elsewhere ? { ...lease, copiedElsewhere: true } : lease;
  }
}
