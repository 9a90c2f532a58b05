/**
 * The coordination store on Redis (ioredis), shared by every gateway replica. Operations
 * that read and then write run as Lua scripts (one per file in ./lua). Keys are
 * hash-tagged per workspace or per pool, so every script touches a single Cluster slot.
 *
 * The hot path is one script per step: a call's begin (resolve the lease, reserve budget,
 * mark busy, move the deadline) and its end (settle, touch, deadline) are one round trip
 * each; CreateSession is three (admission, idle lease, lease record). A lease's deadline
 * lives in its workspace's index (`{ws:W}:deadlines`); the reaper finds the workspaces from
 * the pools' holder sets (`{pool:P}:holders`), written when a sandbox is leased.
 *
 * Redis being away must fail requests fast, not hang them: the offline queue is off, every
 * command has a short timeout, and any failure surfaces as 503 `store.unavailable`. A read
 * that changes nothing (a GET, a listing, a count) is tried once more before that: a reply
 * late because the gateway's own event loop was busy is not Redis being away. ioredis
 * reconnects on its own, so everything recovers when Redis returns.
 */
import { randomBytes } from "node:crypto";
import { SandpoolError } from "../../../contract/error-codes.js";
import type { CoordinationStore } from "../coordination-store.js";
import {
  POOL_DEMAND_TTL_MS,
  type PoolDemandDelta,
  type PoolDemandTotals,
  type PoolStartFailure,
} from "../pool-demand-exchange.js";
import {
  type AdmissionVerdict,
  type CallEnd,
  type CallMark,
  type CallStart,
  type CallStarted,
  type Lease,
  type LeaseKey,
  leaseDeadline,
  type MemberHold,
  type SandboxRecord,
  type SessionAdmission,
} from "../records.js";
import { type LuaScripts, loadLuaScripts } from "./lua-scripts.js";
import {
  connectRedis,
  openRedis,
  publisherFor,
  type RedisClient,
  type RedisTarget,
  redactUrl,
} from "./redis-connection.js";
import { RedisKeys } from "./redis-keys.js";

export { redactUrl };

/** Where Redis is: a standalone server's URL, or any target (Sentinel, Cluster). */
export type RedisStoreOptions = ({ url: string } | { target: RedisTarget }) & {
  /** Namespace of every key: one per deployment. */
  prefix: string;
  commandTimeoutMs?: number;
  /** How long `connect` waits for Redis at start-up before it gives up (default 10 s). */
  startupTimeoutMs?: number;
};

function targetOf(options: RedisStoreOptions): RedisTarget {
  return "target" in options ? options.target : { kind: "standalone", url: options.url };
}

const DAY_MS = 86_400_000;
/** A lease key outlives the session's own deadline by this much; the reaper ends it first. */
const LEASE_KEY_GRACE_MS = 10 * 60_000;
/** How long this replica trusts what it wrote itself (a pool's name, a workspace's hold). */
const REMEMBERED_MS = 60_000;
/** A pool's name is written with every sandbox it starts: trusted longer. */
const POOL_REMEMBERED_MS = 10 * 60_000;
const MAX_REMEMBERED = 10_000;
/** Commands sent at once by the listings (one per workspace). */
const LIST_CONCURRENCY = 16;

const lifetimeEnd = (lease: Lease) => lease.createdAt + lease.maxLifetimeSeconds * 1000;
const leaseEnd = (lease: Lease) => lifetimeEnd(lease) + LEASE_KEY_GRACE_MS;

export class RedisCoordinationStore implements CoordinationStore {
  private readonly redis: RedisClient;
  private subscriber: RedisClient | undefined;
  private readonly keys: RedisKeys;
  private readonly handlers = new Map<string, ((message: string) => void)[]>();
  /** Pools known to be in the pools set, and when this replica last wrote them there. */
  private readonly knownPools = new Map<string, number>();
  /** `pool\0workspace` -> [held until, written at]: holds this replica wrote itself. */
  private readonly knownHolds = new Map<string, [number, number]>();
  /** Whether the legacy deadline index had entries when last read. */
  private legacyIndexInUse = true;

  private constructor(
    private readonly options: RedisStoreOptions,
    private readonly scripts: LuaScripts,
  ) {
    this.keys = new RedisKeys(options.prefix);
    this.redis = openRedis(targetOf(options), "commands", { commandTimeoutMs: options.commandTimeoutMs });
    this.redis.on("error", () => {}); // surfaced per command as store.unavailable
    scripts.defineOn(this.redis);
  }

  /** Connects, failing with a clear error when Redis cannot be reached at start-up. */
  static async connect(options: RedisStoreOptions): Promise<RedisCoordinationStore> {
    const store = new RedisCoordinationStore(options, await loadLuaScripts());
    await connectRedis(store.redis, targetOf(options), options.startupTimeoutMs);
    return store;
  }

  /** True when Redis answers now (readiness). */
  async ping(): Promise<boolean> {
    return this.call(() => this.redis.ping()).then(
      () => true,
      () => false,
    );
  }

  acquireSlot(workspace: string, token: string, limit: number, expiresAt: number, now: number) {
    return this.addUnderLimit(this.keys.slots(workspace), token, limit, expiresAt, now);
  }

  async admitSession(workspace: string, a: SessionAdmission): Promise<AdmissionVerdict> {
    const member = `${a.now}-${randomBytes(6).toString("hex")}`;
    const [verdict, waitMs] = (await this.call(() =>
      this.scripts.run(
        this.redis,
        "admit-session",
        [this.keys.slots(workspace), this.keys.rate(workspace), this.keys.budget(workspace, a.budgetDay)],
        [
          a.token,
          a.slotLimit,
          Math.ceil(a.slotExpiresAt),
          a.now,
          a.ratePerWindow,
          a.rateWindowMs,
          member,
          a.budgetLimitMs,
        ],
      ),
    )) as [string, number?];
    if (verdict === "admitted") return { admitted: true };
    if (verdict === "budget") return { admitted: false, refused: "exec_budget" };
    if (verdict === "slots") return { admitted: false, refused: "concurrent_sessions" };
    return { admitted: false, refused: "session_rate", waitMs: Number(waitMs) };
  }

  async releaseSlot(workspace: string, token: string) {
    await this.call(() => this.redis.zrem(this.keys.slots(workspace), token));
  }

  countSlots(workspace: string, now: number) {
    return this.read(() => this.redis.zcount(this.keys.slots(workspace), `(${now}`, "+inf"));
  }

  async takeRate(workspace: string, limit: number, windowMs: number, now: number) {
    const member = `${now}-${randomBytes(6).toString("hex")}`;
    const wait = await this.call(() =>
      this.scripts.run(this.redis, "take-rate", [this.keys.rate(workspace)], [now, windowMs, limit, member]),
    );
    return Number(wait);
  }

  async reserveBudget(workspace: string, day: string, requestedMs: number, limitMs: number) {
    const granted = await this.call(() =>
      this.scripts.run(
        this.redis,
        "reserve-budget",
        [this.keys.budget(workspace, day)],
        [requestedMs, limitMs, 2 * DAY_MS],
      ),
    );
    return Number(granted);
  }

  async refundBudget(workspace: string, day: string, milliseconds: number) {
    const total = await this.call(() =>
      this.scripts.run(this.redis, "refund-budget", [this.keys.budget(workspace, day)], [milliseconds]),
    );
    return Number(total);
  }

  async readBudget(workspace: string, day: string) {
    return Number((await this.read(() => this.redis.get(this.keys.budget(workspace, day)))) ?? 0);
  }

  async addMember(pool: string, sandboxId: string, maxTotal: number, expiresAt: number, now: number) {
    await this.rememberPool(pool, now, true);
    return this.addUnderLimit(this.keys.members(pool), sandboxId, maxTotal, expiresAt, now);
  }

  async renewMember(pool: string, sandboxId: string, expiresAt: number) {
    await this.call(() => this.redis.zadd(this.keys.members(pool), "XX", expiresAt, sandboxId));
  }

  async removeMember(pool: string, sandboxId: string) {
    await this.call(() => this.redis.zrem(this.keys.members(pool), sandboxId));
  }

  countMembers(pool: string, now: number) {
    return this.read(() => this.redis.zcount(this.keys.members(pool), `(${now}`, "+inf"));
  }

  listMembers(pool: string, now: number) {
    return this.read(() => this.redis.zrangebyscore(this.keys.members(pool), `(${now}`, "+inf"));
  }

  async pushIdle(record: SandboxRecord) {
    await this.call(() => this.redis.lpush(this.keys.idle(record.pool), JSON.stringify(record)));
  }

  async popIdle(pool: string) {
    const raw = await this.call(() => this.redis.rpop(this.keys.idle(pool)));
    return raw ? (JSON.parse(raw) as SandboxRecord) : undefined;
  }

  async leaseIdle(pool: string, hold: MemberHold) {
    const raw = await this.call(() =>
      this.scripts.run(
        this.redis,
        "lease-idle",
        [this.keys.idle(pool), this.keys.members(pool), this.keys.holders(pool)],
        [Math.ceil(hold.until), hold.workspace, hold.now],
      ),
    );
    if (typeof raw !== "string") return undefined;
    this.rememberHold(pool, hold);
    return JSON.parse(raw) as SandboxRecord;
  }

  async holdMember(pool: string, sandboxId: string, hold: MemberHold) {
    await this.call(() =>
      this.scripts.run(
        this.redis,
        "hold-member",
        [this.keys.members(pool), this.keys.holders(pool)],
        [sandboxId, Math.ceil(hold.until), hold.workspace, hold.now],
      ),
    );
    this.rememberHold(pool, hold);
  }

  async takeIdle(pool: string, sandboxId: string) {
    const raw = await this.call(() =>
      this.scripts.run(this.redis, "take-idle", [this.keys.idle(pool)], [sandboxId]),
    );
    return typeof raw === "string" ? (JSON.parse(raw) as SandboxRecord) : undefined;
  }

  async listIdle(pool: string) {
    const raws = await this.read(() => this.redis.lrange(this.keys.idle(pool), 0, -1));
    // The list is pushed on the left and popped on the right: oldest last.
    return raws.reverse().map((raw) => JSON.parse(raw) as SandboxRecord);
  }

  // Read-only views for explain: plain reads, so nothing is purged, recorded or re-expired.
  async countRate(workspace: string, windowMs: number, now: number) {
    const key = this.keys.rate(workspace);
    // The window take-rate keeps: events after now - windowMs.
    const after = `(${now - windowMs}`;
    const [count, oldest] = await Promise.all([
      this.read(() => this.redis.zcount(key, after, "+inf")),
      this.read(() => this.redis.zrangebyscore(key, after, "+inf", "WITHSCORES", "LIMIT", 0, 1)),
    ]);
    return { count, oldestAt: oldest.length >= 2 ? Number(oldest[1]) : null };
  }

  countIdle(pool: string) {
    return this.read(() => this.redis.llen(this.keys.idle(pool)));
  }

  async exchangePoolDemand(pool: string, delta: PoolDemandDelta, window: number) {
    const failure = delta.startFailure;
    const raw = (await this.call(() =>
      this.scripts.run(
        this.redis,
        "exchange-pool-demand",
        [this.keys.demand(pool), this.keys.refills(pool)],
        [
          delta.warmLeases,
          delta.coldLeases,
          delta.warmupFailures,
          window,
          POOL_DEMAND_TTL_MS,
          failure?.at ?? "",
          failure?.message ?? "",
          failure?.nextAttemptAt ?? "",
          failure?.consecutiveFailures ?? "",
          delta.startSucceededAt ?? "",
          ...delta.refillMs.map((ms) => Math.round(ms)),
        ],
      ),
    )) as (string | null | string[])[];
    return demandTotals(raw);
  }

  async putLease(lease: Lease) {
    const now = Date.now();
    // Findable by the reaper: its workspace is among its pool's holders (a lease made by
    // CreateSession is: leaseIdle or holdMember recorded it a moment ago, on this replica).
    await this.rememberPool(lease.pool, now);
    // Held past the lease's last deadline is enough: by then the reaper has ended it.
    if (!this.holdCovers(lease.pool, lease.workspace, lifetimeEnd(lease), now)) {
      const hold = { workspace: lease.workspace, until: leaseEnd(lease), now };
      await this.call(() =>
        this.scripts.run(
          this.redis,
          "hold-workspace",
          [this.keys.holders(lease.pool)],
          [hold.workspace, Math.ceil(hold.until), hold.now],
        ),
      );
      this.rememberHold(lease.pool, hold);
    }
    await this.call(() =>
      this.scripts.run(
        this.redis,
        "put-lease",
        [this.keys.lease(lease), this.keys.deadlines(lease.workspace)],
        [JSON.stringify(lease), Math.ceil(leaseEnd(lease)), leaseDeadline(lease), lease.sessionId],
      ),
    );
  }

  async getLease(key: LeaseKey) {
    const raw = await this.read(() => this.redis.get(this.keys.lease(key)));
    return raw ? (JSON.parse(raw) as Lease) : undefined;
  }

  async touchLease(key: LeaseKey, now: number, call?: CallMark) {
    const mark = !call ? ["", ""] : "begin" in call ? ["begin", call.begin] : ["end", ""];
    const raw = await this.call(() =>
      this.scripts.run(
        this.redis,
        "touch-lease",
        [this.keys.lease(key), this.keys.deadlines(key.workspace)],
        [now, ...mark, key.sessionId],
      ),
    );
    return typeof raw === "string" ? (JSON.parse(raw) as Lease) : undefined;
  }

  async beginCall(key: LeaseKey, start: CallStart): Promise<CallStarted> {
    const budget = start.budget;
    const [outcome, raw, granted] = (await this.call(() =>
      this.scripts.run(
        this.redis,
        "begin-call",
        [
          this.keys.lease(key),
          this.keys.deadlines(key.workspace),
          // Some key of the workspace's slot when there is no budget to reserve.
          budget ? this.keys.budget(key.workspace, budget.day) : this.keys.slots(key.workspace),
        ],
        [
          start.now,
          Math.ceil(start.busyUntil),
          budget ? Math.max(1, Math.ceil(budget.requestedMs)) : 0,
          budget?.limitMs ?? 0,
          2 * DAY_MS,
          key.sessionId,
        ],
      ),
    )) as [string, string?, number?];
    if (outcome === "started") {
      return { outcome, lease: JSON.parse(raw!) as Lease, grantedMs: Number(granted) };
    }
    return { outcome: outcome === "spent" ? "budget_spent" : outcome === "expired" ? "expired" : "gone" };
  }

  async endCall(key: LeaseKey, end: CallEnd) {
    const refund = end.refund;
    const found = await this.call(() =>
      this.scripts.run(
        this.redis,
        "end-call",
        [
          this.keys.lease(key),
          this.keys.deadlines(key.workspace),
          refund ? this.keys.budget(key.workspace, refund.day) : this.keys.slots(key.workspace),
        ],
        [end.now, refund ? Math.max(0, Math.floor(refund.milliseconds)) : 0, key.sessionId],
      ),
    );
    return Number(found) === 1;
  }

  async takeLease(key: LeaseKey) {
    const raw = await this.call(() =>
      this.scripts.run(
        this.redis,
        "take-lease",
        [this.keys.lease(key), this.keys.deadlines(key.workspace)],
        [key.sessionId],
      ),
    );
    if (this.legacyIndexInUse) {
      await this.call(() => this.redis.zrem(this.keys.legacyLeaseIndex(), this.keys.indexMember(key)));
    }
    return typeof raw === "string" ? (JSON.parse(raw) as Lease) : undefined;
  }

  async dueLeases(now: number, limit: number) {
    const due = new Map<string, LeaseKey>();
    const add = (key: LeaseKey) => due.set(JSON.stringify([key.workspace, key.sessionId]), key);
    for (const key of await this.legacyMembers("-inf", now, limit)) add(key);
    const workspaces = await this.workspacesWithLeases(now);
    for (let i = 0; i < workspaces.length && due.size < limit; i += LIST_CONCURRENCY) {
      const batch = workspaces.slice(i, i + LIST_CONCURRENCY);
      const found = await Promise.all(
        batch.map((workspace) =>
          this.read(() =>
            this.redis.zrangebyscore(this.keys.deadlines(workspace), "-inf", now, "LIMIT", 0, limit),
          ),
        ),
      );
      found.forEach((sessions, j) => {
        for (const sessionId of sessions) add({ workspace: batch[j]!, sessionId });
      });
    }
    return [...due.values()].slice(0, limit);
  }

  async listLeases() {
    const now = Date.now();
    const byWorkspace = new Map<string, Set<string>>();
    const add = (key: LeaseKey) => {
      const sessions = byWorkspace.get(key.workspace) ?? new Set<string>();
      sessions.add(key.sessionId);
      byWorkspace.set(key.workspace, sessions);
    };
    for (const key of await this.legacyMembers("-inf", "+inf")) add(key);
    const workspaces = await this.workspacesWithLeases(now);
    for (let i = 0; i < workspaces.length; i += LIST_CONCURRENCY) {
      const batch = workspaces.slice(i, i + LIST_CONCURRENCY);
      const found = await Promise.all(
        batch.map((workspace) =>
          this.read(() => this.redis.zrange(this.keys.deadlines(workspace), "0", "-1")),
        ),
      );
      found.forEach((sessions, j) => {
        for (const sessionId of sessions) add({ workspace: batch[j]!, sessionId });
      });
    }
    const leases: Lease[] = [];
    const entries = [...byWorkspace.entries()];
    for (let i = 0; i < entries.length; i += LIST_CONCURRENCY) {
      await Promise.all(
        entries.slice(i, i + LIST_CONCURRENCY).map(async ([workspace, set]) => {
          const sessions = [...set];
          // One workspace's keys share a slot: one MGET each.
          const raws = await this.read(() =>
            this.redis.mget(sessions.map((sessionId) => this.keys.lease({ workspace, sessionId }))),
          );
          const stale: string[] = [];
          raws.forEach((raw, j) => {
            if (raw) leases.push(JSON.parse(raw) as Lease);
            else stale.push(sessions[j]!);
          });
          // Hints whose lease is gone (it aged out without being taken).
          if (stale.length > 0) {
            await this.call(() => this.redis.zrem(this.keys.deadlines(workspace), ...stale));
          }
        }),
      );
    }
    return leases;
  }

  async publish(channel: string, message: string) {
    const fullChannel = this.keys.channel(channel);
    await this.call(() => publisherFor(this.redis, fullChannel).publish(fullChannel, message));
  }

  async subscribe(channel: string, handler: (message: string) => void) {
    if (!this.subscriber) {
      // A subscribed connection can do nothing else, so it is a connection of its own,
      // with the offline queue on: subscriptions are replayed after a reconnect.
      this.subscriber = openRedis(targetOf(this.options), "subscriber");
      this.subscriber.on("error", () => {});
      this.subscriber.on("message", (fullChannel: string, message: string) => {
        for (const listener of this.handlers.get(fullChannel) ?? []) listener(message);
      });
      await this.subscriber.connect();
    }
    const fullChannel = this.keys.channel(channel);
    const listeners = this.handlers.get(fullChannel) ?? [];
    listeners.push(handler);
    this.handlers.set(fullChannel, listeners);
    if (listeners.length === 1) await this.subscriber.subscribe(fullChannel);
  }

  async close() {
    this.redis.disconnect();
    this.subscriber?.disconnect();
  }

  /** Workspaces holding a sandbox of some pool now: where leases may be. */
  private async workspacesWithLeases(now: number): Promise<string[]> {
    const pools = await this.read(() => this.redis.smembers(this.keys.pools()));
    const holders = await Promise.all(
      pools.map((pool) =>
        this.read(() => this.redis.zrangebyscore(this.keys.holders(pool), `(${now}`, "+inf")),
      ),
    );
    return [...new Set(holders.flat())];
  }

  private async legacyMembers(min: number | string, max: number | string, limit?: number) {
    if (!this.legacyIndexInUse) return [];
    const index = this.keys.legacyLeaseIndex();
    const members = await this.read(() =>
      limit === undefined
        ? this.redis.zrangebyscore(index, min, max)
        : this.redis.zrangebyscore(index, min, max, "LIMIT", "0", String(limit)),
    );
    if (members.length === 0 && (await this.read(() => this.redis.zcard(index))) === 0) {
      this.legacyIndexInUse = false; // nothing writes it any more: it stays empty
    }
    return members.map((member) => this.keys.parseIndexMember(member));
  }

  /** Adds the pool to the pools set, unless this replica did so lately (or `always`). */
  private async rememberPool(pool: string, now: number, always = false): Promise<void> {
    const at = this.knownPools.get(pool);
    if (!always && at !== undefined && now - at < POOL_REMEMBERED_MS) return;
    await this.call(() => this.redis.sadd(this.keys.pools(), pool));
    this.knownPools.set(pool, now);
  }

  private rememberHold(pool: string, hold: MemberHold): void {
    const id = `${pool}\u0000${hold.workspace}`;
    const known = this.knownHolds.get(id);
    if (!known && this.knownHolds.size >= MAX_REMEMBERED) {
      this.knownHolds.delete(this.knownHolds.keys().next().value!);
    }
    this.knownHolds.set(id, [Math.max(hold.until, known?.[0] ?? 0), hold.now]);
  }

  /** Whether this replica lately recorded `workspace` as holding `pool` until `until` or later. */
  private holdCovers(pool: string, workspace: string, until: number, now: number): boolean {
    const known = this.knownHolds.get(`${pool}\u0000${workspace}`);
    return known !== undefined && known[0] >= until && now - known[1] < REMEMBERED_MS;
  }

  private async addUnderLimit(key: string, token: string, limit: number, expiresAt: number, now: number) {
    const held = await this.call(() =>
      this.scripts.run(this.redis, "add-under-limit", [key], [token, limit, Math.ceil(expiresAt), now]),
    );
    return Number(held) === 1;
  }

  private async call<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (error) {
      throw unavailable(error);
    }
  }

  /**
   * A command that changes nothing, tried a second time before the store is declared
   * unavailable: a timeout can be this process's own stall (a busy event loop, a GC pause),
   * not Redis. Never used for a script or a write: a write that timed out may have happened.
   */
  private async read<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch {
      return this.call(command);
    }
  }
}

function unavailable(cause: unknown): SandpoolError {
  return new SandpoolError("store.unavailable", "the coordination store is unavailable", {
    retryAfterSeconds: 1,
    cause,
  });
}

/** The exchange script's answer as totals (see exchange-pool-demand-2.lua for its shape). */
function demandTotals(raw: (string | null | string[])[]): PoolDemandTotals {
  const [warm, cold, failures, failureAt, message, nextAttemptAt, consecutive, succeededAt, refills] = raw;
  const count = (value: unknown) => Number(value ?? 0);
  let startFailure: PoolStartFailure | null = null;
  if (typeof failureAt === "string" && Number(failureAt) > count(succeededAt)) {
    startFailure = {
      message: String(message ?? ""),
      at: Number(failureAt),
      nextAttemptAt: count(nextAttemptAt),
      consecutiveFailures: count(consecutive),
    };
  }
  return {
    warmLeases: count(warm),
    coldLeases: count(cold),
    warmupFailures: count(failures),
    refillMs: Array.isArray(refills) ? refills.map(Number) : [],
    startFailure,
  };
}
