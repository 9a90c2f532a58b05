/**
 * The Redis store's admission counters (admission-store.ts): a workspace's session slots, its
 * session rate window, its execution budget and CPU per day, each step one script or command.
 */
import { randomBytes } from "node:crypto";
import type { AdmissionStore } from "../admission-store.js";
import type { AdmissionVerdict, CpuCharge, CpuCharged, SessionAdmission } from "../records.js";
import type { RedisCommands } from "./redis-commands.js";
import { BUDGET_KEY_TTL_MS, CPU_END_MARK_MS } from "./redis-keys.js";

export class RedisAdmission implements AdmissionStore {
  constructor(private readonly commands: RedisCommands) {}

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

  // A read-only view for explain: plain reads, so nothing is purged, recorded or re-expired.
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

  private get redis() {
    return this.commands.redis;
  }

  private get keys() {
    return this.commands.keys;
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
