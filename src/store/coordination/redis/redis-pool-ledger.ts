/**
 * The Redis store's pools' ledger (pool-ledger.ts): members, their warming, retiring and
 * in-flight marks in sorted sets scored by expiry, and the idle and parked queues as lists;
 * each step that reads and then writes is one script.
 */
import type { InFlightMark, PoolLedger, StartMarks } from "../pool-ledger.js";
import type { MemberHold, SandboxRecord } from "../records.js";
import type { RedisCommands } from "./redis-commands.js";
import type { RedisHolders } from "./redis-holders.js";

export class RedisPoolLedger implements PoolLedger {
  constructor(
    private readonly commands: RedisCommands,
    private readonly holders: RedisHolders,
  ) {}

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

  // A read-only view for explain: a plain read.
  countIdle(pool: string) {
    return this.commands.read(() => this.redis.llen(this.keys.idle(pool)));
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
}
