/**
 * Execution time this replica holds for a workspace's day, so a call served from the lease
 * cache (redis-leases.ts) can be granted its reservation without a round trip. The time is
 * reserved against the day's budget in Redis first, as an extra part of an awaited begin's
 * reservation, so it counts as used there from the start: the budget can never be
 * overspent, whatever the replicas do. Calls take from it and give their unused part back
 * to it; what is left goes back to Redis once the workspace has been quiet for
 * `RETURN_AFTER_MS` (and when the store closes). A replica that dies takes its allotment
 * with it, charged for the day: the safe side.
 *
 * The cost of holding: while one replica holds time, another may be refused a call the
 * remaining budget would otherwise have covered. An allotment is at most a sixteenth of the
 * day's budget (`SHARE_OF_LIMIT`), and one is only taken while the whole of it remains, so
 * near the end of a budget every call reserves on its own, exactly as without allotments.
 */
import type { CallStep } from "./redis-call-steps.js";

/** An allotment covers this many calls' reservations. */
const CALLS_PER_ALLOTMENT = 8;
/** An allotment is at most this fraction of the day's budget. */
const SHARE_OF_LIMIT = 16;
/** An allotment unused for this long goes back to Redis. */
export const RETURN_AFTER_MS = 1_000;

interface Allotment {
  workspace: string;
  day: string;
  limitMs: number;
  freeMs: number;
  lastUsedAt: number;
}

export interface BudgetAsk {
  day: string;
  requestedMs: number;
  limitMs: number;
}

const allotmentKey = (workspace: string, day: string) => `${workspace}\u0000${day}`;

export class BudgetAllotments {
  private readonly held = new Map<string, Allotment>();
  private timer: NodeJS.Timeout | undefined;

  /** `giveBack` sends time back to Redis (a "refund" step, written behind). */
  constructor(
    private readonly giveBack: (step: Extract<CallStep, { kind: "refund" }>) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Grants all of `ask` from the allotment, or nothing (undefined) when it holds too little. */
  take(workspace: string, ask: BudgetAsk): number | undefined {
    const allotment = this.held.get(allotmentKey(workspace, ask.day));
    // Whole milliseconds, at least one, as Redis reserves them.
    const wanted = Math.max(1, Math.ceil(ask.requestedMs));
    if (!allotment || allotment.limitMs !== ask.limitMs || allotment.freeMs < wanted) return undefined;
    allotment.freeMs -= wanted;
    allotment.lastUsedAt = this.now();
    return wanted;
  }

  /**
   * What an awaited begin should reserve beyond its own call's time, to hold for later
   * calls. An allotment too small for the call is given back first (ahead of the begin, in
   * the same script), so the call is cut to what truly remains, not refused while this
   * replica sits on the rest.
   */
  extraFor(workspace: string, ask: BudgetAsk): number {
    const key = allotmentKey(workspace, ask.day);
    const allotment = this.held.get(key);
    if (allotment && allotment.limitMs === ask.limitMs && allotment.freeMs >= ask.requestedMs) return 0;
    if (allotment) {
      this.held.delete(key);
      this.sendBack(workspace, ask.day, allotment.freeMs);
    }
    const extra = Math.min(ask.requestedMs * CALLS_PER_ALLOTMENT, Math.floor(ask.limitMs / SHARE_OF_LIMIT));
    return extra >= ask.requestedMs ? extra : 0;
  }

  /**
   * Keeps what an awaited begin was granted beyond its call's time. `whole` is false when
   * Redis cut the reservation (the budget is nearly spent): then it goes straight back.
   */
  add(workspace: string, ask: BudgetAsk, milliseconds: number, whole: boolean): void {
    if (milliseconds <= 0) return;
    const key = allotmentKey(workspace, ask.day);
    const allotment = this.held.get(key);
    if (!whole || (allotment && allotment.limitMs !== ask.limitMs)) {
      this.sendBack(workspace, ask.day, milliseconds);
      return;
    }
    if (allotment) allotment.freeMs += milliseconds;
    else this.held.set(key, { workspace, ...ask, freeMs: milliseconds, lastUsedAt: this.now() });
    this.timer ??= setInterval(() => this.returnQuiet(), RETURN_AFTER_MS).unref();
  }

  /**
   * Takes a call's unused time back into the workspace's allotment for `day` when it holds
   * one (true), up to twice an allotment's size; else the caller gives it back to Redis.
   */
  keep(workspace: string, day: string, milliseconds: number): boolean {
    const allotment = this.held.get(allotmentKey(workspace, day));
    if (!allotment || allotment.freeMs + milliseconds > 2 * this.sizeOf(allotment)) return false;
    allotment.freeMs += milliseconds;
    return true;
  }

  /** Time taken for a call that did not start after all: kept when it fits, else given back to Redis. */
  restore(workspace: string, day: string, milliseconds: number): void {
    if (!this.keep(workspace, day, milliseconds)) this.sendBack(workspace, day, milliseconds);
  }

  /** Gives every allotment back (the store is closing). */
  returnAll(): void {
    for (const allotment of this.held.values())
      this.sendBack(allotment.workspace, allotment.day, allotment.freeMs);
    this.held.clear();
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private returnQuiet(): void {
    const now = this.now();
    for (const [key, allotment] of this.held) {
      if (now - allotment.lastUsedAt < RETURN_AFTER_MS) continue;
      this.held.delete(key);
      this.sendBack(allotment.workspace, allotment.day, allotment.freeMs);
    }
    if (this.held.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private sizeOf(allotment: Allotment): number {
    return Math.max(Math.floor(allotment.limitMs / SHARE_OF_LIMIT), 1);
  }

  private sendBack(workspace: string, day: string, milliseconds: number): void {
    if (milliseconds > 0)
      this.giveBack({ kind: "refund", workspace, now: this.now(), refund: { day, milliseconds } });
  }
}
