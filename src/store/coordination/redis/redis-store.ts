/**
 * The coordination store on Redis (ioredis), shared by every gateway replica. Operations
 * that read and then write run as Lua scripts (one per file in ./lua). Keys are
 * hash-tagged per workspace or per pool, so every script touches a single Cluster slot.
 *
 * This class holds the connection; each job is a part of its own over the same commands
 * (redis-commands.ts), exposed as the store's methods (../store-of-parts.ts): the admission
 * counters (redis-admission.ts), the pools' ledger (redis-pool-ledger.ts), the leases
 * (redis-leases.ts, with their listings in redis-lease-listings.ts), the broadcast (redis-broadcast.ts), the pools' demand counts
 * (redis-pool-demand.ts) and the usage backlog (redis-usage-backlog.ts).
 * The hot path is one script per step: CreateSession is three (admission, idle lease, lease
 * record), a call's first begin on a replica one; later begins (from the lease cache) and
 * every end ride with the workspace's next script (or go together a moment later).
 *
 * Redis being away must fail requests fast, not hang them: the offline queue is off, every
 * command has a short timeout, and any failure surfaces as 503 `store.unavailable`
 * (redis-commands.ts). ioredis reconnects on its own, so everything recovers when Redis returns.
 */
import type { CoordinationStore } from "../coordination-store.js";
import { StoreOfParts } from "../store-of-parts.js";
import { loadLuaScripts } from "./lua-scripts.js";
import { RedisAdmission } from "./redis-admission.js";
import { RedisBroadcast } from "./redis-broadcast.js";
import { RedisCommands } from "./redis-commands.js";
import { connectRedis, openRedis, type RedisTarget, redactUrl } from "./redis-connection.js";
import { RedisHolders } from "./redis-holders.js";
import { RedisKeys } from "./redis-keys.js";
import { RedisLeaseListings } from "./redis-lease-listings.js";
import { LEASES_ENDED_CHANNEL, RedisLeases } from "./redis-leases.js";
import { LegacyLeaseIndex } from "./redis-legacy-lease-index.js";
import { RedisPoolDemand } from "./redis-pool-demand.js";
import { RedisPoolLedger } from "./redis-pool-ledger.js";
import { RedisUsageBacklog } from "./redis-usage-backlog.js";

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

/** The parts over one connection; the leases announce each session's end on the broadcast. */
function partsOver(commands: RedisCommands, target: RedisTarget) {
  const holders = new RedisHolders(commands);
  const broadcast = new RedisBroadcast(commands, target);
  const legacy = new LegacyLeaseIndex(commands);
  const leases = new RedisLeases(commands, holders, legacy, (message) =>
    broadcast.publish(LEASES_ENDED_CHANNEL, message),
  );
  return {
    admission: new RedisAdmission(commands),
    ledger: new RedisPoolLedger(commands, holders),
    leases,
    leaseListings: new RedisLeaseListings(commands, holders, legacy, () => leases.flushCallEnds()),
    demand: new RedisPoolDemand(commands),
    broadcast,
    usage: new RedisUsageBacklog(commands, holders),
  };
}

export class RedisCoordinationStore extends StoreOfParts implements CoordinationStore {
  private readonly leases: RedisLeases;
  private readonly broadcast: RedisBroadcast;

  private constructor(
    private readonly commands: RedisCommands,
    parts: ReturnType<typeof partsOver>,
  ) {
    super(parts);
    this.leases = parts.leases;
    this.broadcast = parts.broadcast;
  }

  /** Connects, failing with a clear error when Redis cannot be reached at start-up. */
  static async connect(options: RedisStoreOptions): Promise<RedisCoordinationStore> {
    const scripts = await loadLuaScripts();
    const target = targetOf(options);
    const redis = openRedis(target, "commands", { commandTimeoutMs: options.commandTimeoutMs });
    redis.on("error", () => {}); // surfaced per command as store.unavailable
    scripts.defineOn(redis);
    const commands = new RedisCommands(redis, new RedisKeys(options.prefix), scripts);
    const store = new RedisCoordinationStore(commands, partsOver(commands, target));
    await connectRedis(redis, target, options.startupTimeoutMs);
    await store.listenForEndedLeases();
    return store;
  }

  /**
   * The lease cache serves calls only while this replica hears every session's end: from
   * its subscription on, and again after each reconnect (lease-cache.ts).
   */
  private async listenForEndedLeases(): Promise<void> {
    await this.broadcast.subscribe(LEASES_ENDED_CHANNEL, (message) => this.leases.forgetEnded(message));
    this.broadcast.onListening((listening) => this.leases.setCacheCoherent(listening));
    this.leases.setCacheCoherent(true);
  }

  /** True when Redis answers now (readiness). */
  async ping(): Promise<boolean> {
    return this.commands
      .call(() => this.commands.redis.ping())
      .then(
        () => true,
        () => false,
      );
  }

  async close() {
    // The steps of calls put off (redis-call-steps.ts) are written before the connection goes.
    await this.leases.flushSteps();
    this.commands.redis.disconnect();
    this.broadcast.close();
  }
}
