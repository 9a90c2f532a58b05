/**
 * The coordination store on Redis (ioredis), shared by every gateway replica. Operations
 * that read and then write run as Lua scripts (one per file in ./lua). Keys are
 * hash-tagged per workspace or per pool, so every script touches a single Cluster slot.
 *
 * This class holds the connection, the admission counters and the pools' ledger; the leases
 * (redis-leases.ts), the broadcast (redis-broadcast.ts) and the pools' demand counts
 * (redis-pool-demand.ts) are modules of their own over the same commands (redis-commands.ts).
 * The hot path is one script per step: CreateSession is three (admission, idle lease, lease
 * record), a call's first begin on a replica one; later begins (from the lease cache) and
 * every end ride with the workspace's next script (or go together a moment later).
 *
 * Redis being away must fail requests fast, not hang them: the offline queue is off, every
 * command has a short timeout, and any failure surfaces as 503 `store.unavailable`
 * (redis-commands.ts). ioredis reconnects on its own, so everything recovers when Redis returns.
 */
import { randomBytes } from "node:crypto";
import type { CoordinationStore } from "../coordination-store.js";
import type { PoolDemandDelta } from "../pool-demand-exchange.js";
import type { InFlightMark, StartMarks } from "../pool-ledger.js";
import type {
  AdmissionVerdict,
  CallEnd,
  CallMark,
  CallStart,
  CallStarted,
  CpuCharge,
  CpuCharged,
  HibernationStep,
  Lease,
  LeaseKey,
  MemberHold,
  QuietQuery,
  SandboxRecord,
  SessionAdmission,
  SessionEndUsage,
} from "../records.js";
import type { UsageClaim } from "../usage-backlog.js";
import { loadLuaScripts } from "./lua-scripts.js";
import { RedisBroadcast } from "./redis-broadcast.js";
import { RedisCommands } from "./redis-commands.js";
import { connectRedis, openRedis, type RedisTarget, redactUrl } from "./redis-connection.js";
import { RedisHolders } from "./redis-holders.js";
import { BUDGET_KEY_TTL_MS, CPU_END_MARK_MS, RedisKeys } from "./redis-keys.js";
import { LEASES_ENDED_CHANNEL, RedisLeases } from "./redis-leases.js";
import { RedisPoolDemand } from "./redis-pool-demand.js";
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

export class RedisCoordinationStore implements CoordinationStore {
  private readonly holders: RedisHolders;
  private readonly leases: RedisLeases;
  private readonly broadcast: RedisBroadcast;
  private readonly demand: RedisPoolDemand;
  private readonly usage: RedisUsageBacklog;

  private constructor(
    private readonly commands: RedisCommands,
    target: RedisTarget,
  ) {
    this.holders = new RedisHolders(commands);
    this.broadcast = new RedisBroadcast(commands, target);
    this.leases = new RedisLeases(commands, this.holders, (message) =>
      this.broadcast.publish(LEASES_ENDED_CHANNEL, message),
    );
    this.demand = new RedisPoolDemand(commands);
    this.usage = new RedisUsageBacklog(commands, this.holders);
  }

  /** Connects, failing with a clear error when Redis cannot be reached at start-up. */
  static async connect(options: RedisStoreOptions): Promise<RedisCoordinationStore> {
    const scripts = await loadLuaScripts();
    const target = targetOf(options);
    const redis = openRedis(target, "commands", { commandTimeoutMs: options.commandTimeoutMs });
    redis.on("error", () => {}); // surfaced per command as store.unavailable
    scripts.defineOn(redis);
    const commands = new RedisCommands(redis, new RedisKeys(options.prefix), scripts);
    const store = new RedisCoordinationStore(commands, target);
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

  // Admission: concurrent-session slots, session rate, execution budget.

  acquireSlot(workspace: string, token: string, limit: number, expiresAt: number, now: number) {
    return this.addUnderLimit([this.keys.slots(workspace)], token, limit, expiresAt, now);
  }

  async admitSession(workspace: string, a: SessionAdmission): Promise<AdmissionVerdict> {
    const member = `${a.now}-${randomBytes(6).toString("hex")}`;
    const [verdict, waitMs] = (await this.commands.script(
      "admit-session",
      [
        this.keys.slots(workspace),
        this.keys.rate(workspace),
        this.keys.budget(workspace, a.budgetDay),
        this.keys.cpuDay(workspace, a.budgetDay),
      ],
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
    )) as [string, number?];
    if (verdict === "admitted") return { admitted: true };
    if (verdict === "budget") return { admitted: false, refused: "exec_budget" };
    if (verdict === "slots") return { admitted: false, refused: "concurrent_sessions" };
    return { admitted: false, refused: "session_rate", waitMs: Number(waitMs) };
  }

  async releaseSlot(workspace: string, token: string) {
    await this.commands.call(() => this.redis.zrem(this.keys.slots(workspace), token));
  }

  countSlots(workspace: string, now: number) {
    return this.commands.read(() => this.redis.zcount(this.keys.slots(workspace), `(${now}`, "+inf"));
  }

  async takeRate(workspace: string, limit: number, windowMs: number, now: number) {
    const member = `${now}-${randomBytes(6).toString("hex")}`;
    const wait = await this.commands.script(
      "take-rate",
      [this.keys.rate(workspace)],
      [now, windowMs, limit, member],
    );
    return Number(wait);
  }

  async reserveBudget(workspace: string, day: string, requestedMs: number, limitMs: number) {
    const granted = await this.commands.script(
      "reserve-budget",
      [this.keys.budget(workspace, day), this.keys.cpuDay(workspace, day)],
      [requestedMs, limitMs, BUDGET_KEY_TTL_MS],
    );
    return Number(granted);
  }

  async refundBudget(workspace: string, day: string, milliseconds: number) {
    const total = await this.commands.script(
      "refund-budget",
      [this.keys.budget(workspace, day)],
      [milliseconds],
    );
    return Number(total);
  }

  async readBudget(workspace: string, day: string) {
    // The day has used the larger of its calls' wall time and its sandboxes' CPU.
    const [wall, cpu] = await this.commands.read(() =>
      this.redis.mget(this.keys.budget(workspace, day), this.keys.cpuDay(workspace, day)),
    );
    return Math.max(Number(wall ?? 0), Number(cpu ?? 0));
  }

  async chargeCpu(workspace: string, charge: CpuCharge): Promise<CpuCharged> {
    const { keys } = this;
    const [chargedMs, cpuDayMs, usedMs] = (await this.commands.script(
      "charge-cpu",
      [
        keys.cpuReadings(workspace),
        keys.cpuDay(workspace, charge.day),
        keys.budget(workspace, charge.day),
        keys.cpuEnded(workspace, charge.sessionId),
      ],
      [
        charge.sessionId,
        charge.cpuMs === undefined ? -1 : Math.floor(charge.cpuMs),
        charge.baseMs === undefined ? -1 : Math.floor(charge.baseMs),
        charge.final ? "1" : "0",
        BUDGET_KEY_TTL_MS,
        CPU_END_MARK_MS,
      ],
    )) as [number, number, number];
    return { chargedMs: Number(chargedMs), cpuDayMs: Number(cpuDayMs), usedMs: Number(usedMs) };
  }

  // The pools' ledger: membership caps a pool's size; idle members wait to be leased.

  async addMember(
    pool: string,
    sandboxId: string,
    maxTotal: number,
    expiresAt: number,
    now: number,
    marks: StartMarks = {},
  ) {
    await this.holders.rememberPool(pool, now, true);
    const held = await this.commands.script(
      "add-member",
      [this.keys.members(pool), this.keys.warming(pool), this.keys.inFlight(pool)],
      [
        sandboxId,
        maxTotal,
        Math.ceil(expiresAt),
        now,
        marks.warming ? "1" : "0",
        Math.ceil(marks.inFlightUntil ?? 0),
      ],
    );
    return Number(held) === 1;
  }

  async renewInFlight(pool: string, sandboxIds: readonly string[], until: number, now: number) {
    if (sandboxIds.length === 0) return;
    await this.commands.script(
      "renew-in-flight",
      [this.keys.inFlight(pool)],
      [Math.ceil(until), now, ...sandboxIds],
    );
  }

  async listInFlight(pool: string) {
    const flat = await this.commands.read(() =>
      this.redis.zrange(this.keys.inFlight(pool), "0", "-1", "WITHSCORES"),
    );
    const marks: InFlightMark[] = [];
    for (let i = 0; i < flat.length; i += 2) marks.push({ sandboxId: flat[i]!, until: Number(flat[i + 1]) });
    return marks;
  }

  async endInFlight(pool: string, sandboxId: string) {
    await this.commands.call(() => this.redis.zrem(this.keys.inFlight(pool), sandboxId));
  }

  async reclaimInFlight(pool: string, sandboxId: string, now: number) {
    const keys = [
      this.keys.inFlight(pool),
      this.keys.members(pool),
      this.keys.warming(pool),
      this.keys.retiring(pool),
    ];
    return Number(await this.commands.script("reclaim-in-flight", keys, [sandboxId, now])) === 1;
  }

  countWarming(pool: string, now: number) {
    return this.countLive(this.keys.warming(pool), now);
  }

  async renewMember(pool: string, sandboxId: string, expiresAt: number, now: number) {
    await this.commands.script(
      "renew-member",
      [this.keys.members(pool)],
      [sandboxId, Math.ceil(expiresAt), now],
    );
  }

  async removeMember(pool: string, sandboxId: string) {
    const keys = [
      this.keys.members(pool),
      this.keys.warming(pool),
      this.keys.retiring(pool),
      this.keys.inFlight(pool),
    ];
    await this.commands.script("remove-member", keys, [sandboxId]);
  }

  async markRetiring(pool: string, sandboxId: string, expiresAt: number, now: number) {
    await this.commands.script(
      "mark-retiring",
      [this.keys.retiring(pool)],
      [sandboxId, Math.ceil(expiresAt), now],
    );
  }

  countRetiring(pool: string, now: number) {
    return this.countLive(this.keys.retiring(pool), now);
  }

  countMembers(pool: string, now: number) {
    return this.countLive(this.keys.members(pool), now);
  }

  listMembers(pool: string, now: number) {
    return this.commands.read(() => this.redis.zrangebyscore(this.keys.members(pool), `(${now}`, "+inf"));
  }

  async pushIdle(record: SandboxRecord, membership?: { until: number; now: number }) {
    const { pool } = record;
    const pushed = await this.commands.script(
      "push-idle",
      [this.keys.idle(pool), this.keys.warming(pool), this.keys.members(pool), this.keys.inFlight(pool)],
      [
        JSON.stringify(record),
        record.sandboxId,
        membership ? Math.ceil(membership.until) : "",
        membership?.now ?? 0,
      ],
    );
    return Number(pushed) === 1;
  }

  async parkIdle(record: SandboxRecord, membership: { until: number; now: number }) {
    const { pool } = record;
    // The idle push's script, on the parked list, ending the retiring mark instead of warming.
    const parked = await this.commands.script(
      "push-idle",
      [this.keys.parked(pool), this.keys.retiring(pool), this.keys.members(pool), this.keys.inFlight(pool)],
      [JSON.stringify(record), record.sandboxId, Math.ceil(membership.until), membership.now],
    );
    return Number(parked) === 1;
  }

  async listParked(pool: string) {
    const raws = await this.commands.read(() => this.redis.lrange(this.keys.parked(pool), 0, -1));
    return raws.map((raw) => JSON.parse(raw) as SandboxRecord);
  }

  async takeParked(pool: string, sandboxId: string) {
    const raw = await this.commands.script("take-idle", [this.keys.parked(pool)], [sandboxId]);
    return typeof raw === "string" ? (JSON.parse(raw) as SandboxRecord) : undefined;
  }

  async popParked(pool: string) {
    const raw = await this.commands.call(() => this.redis.rpop(this.keys.parked(pool)));
    return raw ? (JSON.parse(raw) as SandboxRecord) : undefined;
  }

  async popIdle(pool: string) {
    const raw = await this.commands.call(() => this.redis.rpop(this.keys.idle(pool)));
    return raw ? (JSON.parse(raw) as SandboxRecord) : undefined;
  }

  async leaseIdle(pool: string, hold: MemberHold) {
    const raw = await this.commands.script(
      "lease-idle",
      [
        this.keys.idle(pool),
        this.keys.members(pool),
        this.keys.holders(pool),
        this.keys.inFlight(pool),
        this.keys.parked(pool),
      ],
      [
        Math.ceil(hold.until),
        hold.workspace,
        hold.now,
        Math.ceil(hold.handOverBy ?? 0),
        hold.reuse === false ? "0" : "1",
      ],
    );
    if (typeof raw !== "string") return undefined;
    this.holders.rememberHold(pool, hold);
    return JSON.parse(raw) as SandboxRecord;
  }

  async holdMember(pool: string, sandboxId: string, hold: MemberHold) {
    const held = await this.commands.script(
      "hold-member",
      [this.keys.members(pool), this.keys.holders(pool), this.keys.inFlight(pool)],
      [sandboxId, Math.ceil(hold.until), hold.workspace, hold.now, Math.ceil(hold.handOverBy ?? 0)],
    );
    if (Number(held) !== 1) return false;
    this.holders.rememberHold(pool, hold);
    return true;
  }

  async takeIdle(pool: string, sandboxId: string) {
    const raw = await this.commands.script("take-idle", [this.keys.idle(pool)], [sandboxId]);
    return typeof raw === "string" ? (JSON.parse(raw) as SandboxRecord) : undefined;
  }

  async listIdle(pool: string) {
    const raws = await this.commands.read(() => this.redis.lrange(this.keys.idle(pool), 0, -1));
    // The list is pushed on the left and popped on the right: oldest last.
    return raws.reverse().map((raw) => JSON.parse(raw) as SandboxRecord);
  }

  // Read-only views for explain: plain reads, so nothing is purged, recorded or re-expired.
  async countRate(workspace: string, windowMs: number, now: number) {
    const key = this.keys.rate(workspace);
    // The window take-rate keeps: events after now - windowMs.
    const after = `(${now - windowMs}`;
    const [count, oldest] = await Promise.all([
      this.commands.read(() => this.redis.zcount(key, after, "+inf")),
      this.commands.read(() => this.redis.zrangebyscore(key, after, "+inf", "WITHSCORES", "LIMIT", 0, 1)),
    ]);
    return { count, oldestAt: oldest.length >= 2 ? Number(oldest[1]) : null };
  }

  countIdle(pool: string) {
    return this.commands.read(() => this.redis.llen(this.keys.idle(pool)));
  }

  // The pools' demand counts, the leases and the broadcast: modules of their own.

  exchangePoolDemand(pool: string, delta: PoolDemandDelta, window: number) {
    return this.demand.exchangePoolDemand(pool, delta, window);
  }

  putLease(lease: Lease, usage?: string) {
    return this.leases.putLease(lease, usage);
  }

  getLease(key: LeaseKey) {
    return this.leases.getLease(key);
  }

  touchLease(key: LeaseKey, now: number, call?: CallMark) {
    return this.leases.touchLease(key, now, call);
  }

  beginCall(key: LeaseKey, start: CallStart): Promise<CallStarted> {
    return this.leases.beginCall(key, start);
  }

  endCall(key: LeaseKey, end: CallEnd) {
    return this.leases.endCall(key, end);
  }

  stepHibernation(key: LeaseKey, step: HibernationStep) {
    return this.leases.stepHibernation(key, step);
  }

  takeLease(key: LeaseKey, ended?: SessionEndUsage) {
    return this.leases.takeLease(key, ended);
  }

  appendUsage(workspace: string, records: readonly string[]) {
    return this.usage.appendUsage(workspace, records);
  }

  claimUsage(workspace: string, claim: UsageClaim) {
    return this.usage.claimUsage(workspace, claim);
  }

  ackUsage(workspace: string, token: string) {
    return this.usage.ackUsage(workspace, token);
  }

  usageWorkspaces(now: number) {
    return this.usage.usageWorkspaces(now);
  }

  usageBacklogSize(workspace: string) {
    return this.usage.usageBacklogSize(workspace);
  }

  markUsageWaiting(workspace: string, waiting: boolean) {
    return this.usage.markUsageWaiting(workspace, waiting);
  }

  flushCallEnds() {
    return this.leases.flushCallEnds();
  }

  dueLeases(now: number, limit: number) {
    return this.leases.dueLeases(now, limit);
  }

  quietLeases(query: QuietQuery) {
    return this.leases.quietLeases(query);
  }

  listLeases() {
    return this.leases.listLeases();
  }

  publish(channel: string, message: string) {
    return this.broadcast.publish(channel, message);
  }

  subscribe(channel: string, handler: (message: string) => void) {
    return this.broadcast.subscribe(channel, handler);
  }

  async close() {
    // The steps of calls put off (redis-call-steps.ts) are written before the connection goes.
    await this.leases.flushSteps();
    this.redis.disconnect();
    this.broadcast.close();
  }

  private get redis() {
    return this.commands.redis;
  }

  private get keys() {
    return this.commands.keys;
  }

  /** How many entries of an expiring sorted set are still live at `now`. */
  private countLive(key: string, now: number) {
    return this.commands.read(() => this.redis.zcount(key, `(${now}`, "+inf"));
  }

  /** Holds `token` in `keys[0]` under `limit` (add-under-limit-n.lua): a workspace's session slots. */
  private async addUnderLimit(keys: string[], token: string, limit: number, expiresAt: number, now: number) {
    const held = await this.commands.script("add-under-limit", keys, [
      token,
      limit,
      Math.ceil(expiresAt),
      now,
    ]);
    return Number(held) === 1;
  }
}
