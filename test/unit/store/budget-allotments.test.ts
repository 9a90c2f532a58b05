/**
 * The rules of a replica's budget allotments (src/store/coordination/redis/redis-budget-allotments.ts),
 * with what they give back to Redis recorded: the Redis side is covered by
 * test/integration/redis/lease-cache.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  BudgetAllotments,
  RETURN_AFTER_MS,
} from "../../../src/store/coordination/redis/redis-budget-allotments.js";
import type { CallStep } from "../../../src/store/coordination/redis/redis-call-steps.js";

const DAY = "2026-12-01";
const ask = { day: DAY, requestedMs: 1_000, limitMs: 3_600_000 };

describe("budget allotments", () => {
  let givenBack: CallStep[];
  let allotments: BudgetAllotments;

  beforeEach(() => {
    vi.useFakeTimers();
    givenBack = [];
    allotments = new BudgetAllotments((step) => givenBack.push(step), Date.now);
  });
  afterEach(() => {
    allotments.returnAll();
    vi.useRealTimers();
  });
  const returned = () =>
    givenBack.map((step) => (step.kind === "refund" ? step.refund.milliseconds : Number.NaN));

  it("asks for eight calls' time beyond the call, and grants calls from it until it is short", () => {
    expect(allotments.take("w", ask)).toBeUndefined();
    expect(allotments.extraFor("w", ask)).toBe(8_000);
    allotments.add("w", ask, 8_000, true);
    for (let i = 0; i < 8; i++) expect(allotments.take("w", ask)).toBe(1_000);
    expect(allotments.take("w", ask)).toBeUndefined();
    // Another workspace, another day: nothing held for them.
    allotments.add("w", ask, 8_000, true);
    expect(allotments.take("v", ask)).toBeUndefined();
    expect(allotments.take("w", { ...ask, day: "2026-12-02" })).toBeUndefined();
  });

  it("holds at most a sixteenth of the day's budget, and nothing when that is less than a call", () => {
    expect(allotments.extraFor("w", { ...ask, limitMs: 64_000 })).toBe(4_000);
    expect(allotments.extraFor("w", { ...ask, limitMs: 15_000 })).toBe(0);
  });

  it("gives back at once what a cut reservation left over, and what was held under another limit", () => {
    allotments.add("w", ask, 300, false);
    expect(returned()).toEqual([300]);
    allotments.add("w", ask, 8_000, true);
    expect(allotments.take("w", { ...ask, limitMs: 1_000_000 })).toBeUndefined();
    allotments.add("w", { ...ask, limitMs: 1_000_000 }, 2_000, true);
    expect(returned()).toEqual([300, 2_000]);
  });

  it("gives an allotment too small for the call back before the call asks Redis", () => {
    allotments.add("w", ask, 1_500, true);
    expect(allotments.take("w", ask)).toBe(1_000);
    expect(allotments.extraFor("w", ask)).toBe(8_000);
    expect(returned()).toEqual([500]);
    expect(allotments.take("w", ask)).toBeUndefined();
  });

  it("keeps a call's unused time up to twice its size, the rest is for Redis", () => {
    const small = { ...ask, limitMs: 32_000 }; // allotments of 2 s at most
    allotments.add("w", small, 2_000, true);
    expect(allotments.keep("w", DAY, 1_500)).toBe(true);
    expect(allotments.keep("w", DAY, 1_000)).toBe(false);
    expect(allotments.keep("v", DAY, 10)).toBe(false);
  });

  it("gives back what it holds once the workspace has been quiet, and all of it on close", () => {
    allotments.add("w", ask, 8_000, true);
    allotments.add("v", ask, 8_000, true);
    vi.advanceTimersByTime(RETURN_AFTER_MS / 2);
    allotments.take("v", ask);
    vi.advanceTimersByTime(RETURN_AFTER_MS);
    expect(returned()).toEqual([8_000]);
    allotments.returnAll();
    expect(returned()).toEqual([8_000, 7_000]);
    expect(allotments.take("v", ask)).toBeUndefined();
  });
});
