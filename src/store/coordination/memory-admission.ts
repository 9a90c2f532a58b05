/**
 * The memory store's admission counters (admission-store.ts): a workspace's slots, its session
 * rate window, its execution budget and CPU per day. Nothing awaits between a read and its
 * write (memory-store.ts); the leases reserve and refund budget through the `...Now` bodies.
 */
import type { AdmissionStore } from "./admission-store.js";
import { ExpiringSet, getOrCreate } from "./memory-expiring-set.js";
import type { AdmissionVerdict, CpuCharge, CpuCharged, SessionAdmission } from "./records.js";

export class MemoryAdmission implements AdmissionStore {
  private readonly slots = new Map<string, ExpiringSet>();
  private readonly rates = new Map<string, number[]>();
  private readonly budgets = new Map<string, number>();
  /** workspace + day -> the day's CPU total (ms); workspace + session -> its last CPU reading. */
  private readonly cpuDays = new Map<string, number>();
  private readonly cpuReadings = new Map<string, number>();
  private readonly cpuEnded = new Set<string>();

  async acquireSlot(workspace: string, token: string, limit: number, expiresAt: number, now: number) {
    return getOrCreate(this.slots, workspace, () => new ExpiringSet()).add(token, limit, expiresAt, now);
  }

  async admitSession(workspace: string, a: SessionAdmission): Promise<AdmissionVerdict> {
    if (this.usedOf(`${workspace}\u0000${a.budgetDay}`) >= a.budgetLimitMs) {
      return { admitted: false, refused: "exec_budget" };
    }
    const slots = getOrCreate(this.slots, workspace, () => new ExpiringSet());
    if (!slots.has(a.token, a.now) && slots.live(a.now) >= a.slotLimit) {
      return { admitted: false, refused: "concurrent_sessions" };
    }
    const waitMs = this.waitForRate(workspace, a.ratePerWindow, a.rateWindowMs, a.now);
    if (waitMs > 0) return { admitted: false, refused: "session_rate", waitMs };
    this.rates.get(workspace)!.push(a.now);
    slots.add(a.token, Number.MAX_SAFE_INTEGER, a.slotExpiresAt, a.now);
    return { admitted: true };
  }

  async releaseSlot(workspace: string, token: string) {
    this.slots.get(workspace)?.delete(token);
  }

  async countSlots(workspace: string, now: number) {
    return this.slots.get(workspace)?.live(now) ?? 0;
  }

  async takeRate(workspace: string, limit: number, windowMs: number, now: number) {
    const waitMs = this.waitForRate(workspace, limit, windowMs, now);
    if (waitMs === 0) this.rates.get(workspace)!.push(now);
    return waitMs;
  }

  /** 0 when the window has room for one more event, else the milliseconds until it will. */
  private waitForRate(workspace: string, limit: number, windowMs: number, now: number): number {
    const events = getOrCreate(this.rates, workspace, () => []);
    while (events.length > 0 && events[0]! <= now - windowMs) events.shift();
    return events.length >= limit ? Math.max(1, events[0]! + windowMs - now) : 0;
  }

  async reserveBudget(workspace: string, day: string, requestedMs: number, limitMs: number) {
    return this.reserveBudgetNow(workspace, day, requestedMs, limitMs);
  }

  /** `reserveBudget` without an await: the leases' `beginCall` reserves inside its own step. */
  reserveBudgetNow(workspace: string, day: string, requestedMs: number, limitMs: number): number {
    const key = `${workspace}\u0000${day}`;
    const granted = Math.max(0, Math.min(requestedMs, limitMs - this.usedOf(key)));
    if (granted > 0) this.budgets.set(key, (this.budgets.get(key) ?? 0) + granted);
    return granted;
  }

  async refundBudget(workspace: string, day: string, milliseconds: number) {
    return this.refundBudgetNow(workspace, day, milliseconds);
  }

  /** `refundBudget` without an await: the leases' `endCall` refunds inside its own step. */
  refundBudgetNow(workspace: string, day: string, milliseconds: number): number {
    const key = `${workspace}\u0000${day}`;
    const used = this.budgets.get(key);
    if (used === undefined) return 0;
    const total = Math.max(0, used - milliseconds);
    this.budgets.set(key, total);
    return total;
  }

  async readBudget(workspace: string, day: string) {
    return this.usedOf(`${workspace}\u0000${day}`);
  }

  /** What a day has used: the larger of its calls' wall time and its sandboxes' CPU. */
  private usedOf(dayKey: string): number {
    return Math.max(this.budgets.get(dayKey) ?? 0, this.cpuDays.get(dayKey) ?? 0);
  }

  async chargeCpu(workspace: string, charge: CpuCharge): Promise<CpuCharged> {
    const readingKey = `${workspace}\u0000${charge.sessionId}`;
    let chargedMs = 0;
    if (!this.cpuEnded.has(readingKey) && charge.cpuMs !== undefined) {
      const reading = Math.floor(charge.cpuMs);
      const last = this.cpuReadings.get(readingKey) ?? charge.baseMs ?? reading;
      chargedMs = Math.max(0, reading - Math.floor(last));
      if (!charge.final) this.cpuReadings.set(readingKey, Math.max(last, reading));
    }
    if (charge.final) {
      this.cpuReadings.delete(readingKey);
      // Sessions are never reused: the mark only has to outlive a meter round, kept for the store's life.
      this.cpuEnded.add(readingKey);
    }
    const dayKey = `${workspace}\u0000${charge.day}`;
    const cpuDayMs = (this.cpuDays.get(dayKey) ?? 0) + chargedMs;
    this.cpuDays.set(dayKey, cpuDayMs);
    return { chargedMs, cpuDayMs, usedMs: Math.max(this.budgets.get(dayKey) ?? 0, cpuDayMs) };
  }

  // A read-only view for explain: nothing is purged or recorded.
  async countRate(workspace: string, windowMs: number, now: number) {
    const live = (this.rates.get(workspace) ?? []).filter((at) => at > now - windowMs);
    return { count: live.length, oldestAt: live[0] ?? null };
  }
}
