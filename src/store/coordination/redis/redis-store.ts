/**
 * The coordination store on Redis (ioredis), shared by every gateway replica. Operations
 * that read and then write run as Lua scripts (one per file in ./lua). Keys are
 * hash-tagged per workspace or per pool, so every script touches a single Cluster slot;
 * the one cross-slot structure, the lease deadline index, is only a hint that the reaper
 * re-checks against the lease itself.
 *
 * Redis being away must fail requests fast, not hang them: the offline queue is off, every
 * command has a short timeout, and any failure surfaces as 503 `store.unavailable`.
 * ioredis reconnects on its own, so everything recovers when Redis returns.
 */
import { randomBytes } from "node:crypto";
import { Redis, type RedisOptions } from "ioredis";
import { SandpoolError } from "../../../contract/error-codes.js";
import type { CoordinationStore } from "../coordination-store.js";
import {
  POOL_DEMAND_TTL_MS,
  type PoolDemandDelta,
  type PoolDemandTotals,
  type PoolStartFailure,
} from "../pool-demand-exchange.js";
import { type CallMark, type Lease, type LeaseKey, leaseDeadline, type SandboxRecord } from "../records.js";
import { type LuaScripts, loadLuaScripts } from "./lua-scripts.js";
import { RedisKeys } from "./redis-keys.js";

export interface RedisStoreOptions {
  url: string;
  /** Namespace of every key: one per deployment. */
  prefix: string;
  commandTimeoutMs?: number;
}

const DAY_MS = 86_400_000;
/** A lease key outlives the session's own deadline by this much; the reaper ends it first. */
const LEASE_KEY_GRACE_MS = 10 * 60_000;

export class RedisCoordinationStore implements CoordinationStore {
  private readonly redis: Redis;
  private subscriber: Redis | undefined;
  private readonly keys: RedisKeys;
  private readonly handlers = new Map<string, ((message: string) => void)[]>();

  private constructor(
    private readonly options: RedisStoreOptions,
    private readonly scripts: LuaScripts,
  ) {
    this.keys = new RedisKeys(options.prefix);
    this.redis = new Redis(options.url, connectionOptions(options));
    this.redis.on("error", () => {}); // surfaced per command as store.unavailable
    scripts.defineOn(this.redis);
  }

  /** Connects, failing with a clear error when Redis cannot be reached at start-up. */
  static async connect(options: RedisStoreOptions): Promise<RedisCoordinationStore> {
    const store = new RedisCoordinationStore(options, await loadLuaScripts());
    try {
      await store.redis.connect();
    } catch (error) {
      store.redis.disconnect();
      throw new Error(`cannot reach Redis at ${redactUrl(options.url)}: ${(error as Error).message}`);
    }
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

  async releaseSlot(workspace: string, token: string) {
    await this.call(() => this.redis.zrem(this.keys.slots(workspace), token));
  }

  countSlots(workspace: string, now: number) {
    return this.call(() => this.redis.zcount(this.keys.slots(workspace), `(${now}`, "+inf"));
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
    return Number((await this.call(() => this.redis.get(this.keys.budget(workspace, day)))) ?? 0);
  }

  addMember(pool: string, sandboxId: string, maxTotal: number, expiresAt: number, now: number) {
    return this.addUnderLimit(this.keys.members(pool), sandboxId, maxTotal, expiresAt, now);
  }

  async renewMember(pool: string, sandboxId: string, expiresAt: number) {
    await this.call(() => this.redis.zadd(this.keys.members(pool), "XX", expiresAt, sandboxId));
  }

  async removeMember(pool: string, sandboxId: string) {
    await this.call(() => this.redis.zrem(this.keys.members(pool), sandboxId));
  }

  countMembers(pool: string, now: number) {
    return this.call(() => this.redis.zcount(this.keys.members(pool), `(${now}`, "+inf"));
  }

  listMembers(pool: string, now: number) {
    return this.call(() => this.redis.zrangebyscore(this.keys.members(pool), `(${now}`, "+inf"));
  }

  async pushIdle(record: SandboxRecord) {
    await this.call(() => this.redis.lpush(this.keys.idle(record.pool), JSON.stringify(record)));
  }

  async popIdle(pool: string) {
    const raw = await this.call(() => this.redis.rpop(this.keys.idle(pool)));
    return raw ? (JSON.parse(raw) as SandboxRecord) : undefined;
  }

  async takeIdle(pool: string, sandboxId: string) {
    const raw = await this.call(() =>
      this.scripts.run(this.redis, "take-idle", [this.keys.idle(pool)], [sandboxId]),
    );
    return typeof raw === "string" ? (JSON.parse(raw) as SandboxRecord) : undefined;
  }

  async listIdle(pool: string) {
    const raws = await this.call(() => this.redis.lrange(this.keys.idle(pool), 0, -1));
    // The list is pushed on the left and popped on the right: oldest last.
    return raws.reverse().map((raw) => JSON.parse(raw) as SandboxRecord);
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
    const expireAt = lease.createdAt + lease.maxLifetimeSeconds * 1000 + LEASE_KEY_GRACE_MS;
    await this.call(() =>
      this.redis.set(this.keys.lease(lease), JSON.stringify(lease), "PXAT", Math.ceil(expireAt)),
    );
    await this.call(() =>
      this.redis.zadd(this.keys.leaseIndex(), leaseDeadline(lease), this.keys.indexMember(lease)),
    );
  }

  async getLease(key: LeaseKey) {
    const raw = await this.call(() => this.redis.get(this.keys.lease(key)));
    return raw ? (JSON.parse(raw) as Lease) : undefined;
  }

  async touchLease(key: LeaseKey, now: number, call?: CallMark) {
    const mark = !call ? ["", ""] : "begin" in call ? ["begin", call.begin] : ["end", ""];
    const raw = await this.call(() =>
      this.scripts.run(this.redis, "touch-lease", [this.keys.lease(key)], [now, ...mark]),
    );
    if (typeof raw !== "string") return undefined;
    const lease = JSON.parse(raw) as Lease;
    await this.call(() =>
      this.redis.zadd(this.keys.leaseIndex(), leaseDeadline(lease), this.keys.indexMember(key)),
    );
    return lease;
  }

  async takeLease(key: LeaseKey) {
    const raw = await this.call(() => this.redis.getdel(this.keys.lease(key)));
    await this.call(() => this.redis.zrem(this.keys.leaseIndex(), this.keys.indexMember(key)));
    return raw ? (JSON.parse(raw) as Lease) : undefined;
  }

  async dueLeases(now: number, limit: number) {
    const members = await this.call(() =>
      this.redis.zrangebyscore(this.keys.leaseIndex(), "-inf", now, "LIMIT", 0, limit),
    );
    return members.map((member) => this.keys.parseIndexMember(member));
  }

  async listLeases() {
    const members = await this.call(() => this.redis.zrange(this.keys.leaseIndex(), "0", "-1"));
    const leases: Lease[] = [];
    for (const member of members) {
      const lease = await this.getLease(this.keys.parseIndexMember(member));
      if (lease) leases.push(lease);
      else await this.call(() => this.redis.zrem(this.keys.leaseIndex(), member)); // a stale hint
    }
    return leases;
  }

  async publish(channel: string, message: string) {
    await this.call(() => this.redis.publish(this.keys.channel(channel), message));
  }

  async subscribe(channel: string, handler: (message: string) => void) {
    if (!this.subscriber) {
      // A subscribed connection can do nothing else, so it is a connection of its own,
      // with the offline queue on: subscriptions are replayed after a reconnect.
      this.subscriber = new Redis(this.options.url, { lazyConnect: true, maxRetriesPerRequest: null });
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
      throw new SandpoolError("store.unavailable", "the coordination store is unavailable", {
        retryAfterSeconds: 1,
        cause: error,
      });
    }
  }
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

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(unparsable URL)";
  }
}

function connectionOptions(options: RedisStoreOptions): RedisOptions {
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: options.commandTimeoutMs ?? 1_000,
    connectTimeout: 2_000,
    // Keep trying forever, never more than a second apart: recovery needs no restart.
    retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
  };
}
