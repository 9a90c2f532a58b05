import { describe, expect, it } from "vitest";
import { StartBackoff } from "../../../src/pool/start-backoff.js";

/** Fails at each moment the previous wait ends: one failure per step. */
function failInSteps(backoff: StartBackoff, steps: number, start = 0): number[] {
  const delays: number[] = [];
  let now = start;
  for (let i = 0; i < steps; i++) {
    const { delayMs } = backoff.failed(now, "boom");
    delays.push(delayMs);
    now += delayMs;
  }
  return delays;
}

describe("StartBackoff", () => {
  it("allows a start before any failure", () => {
    const backoff = new StartBackoff();
    expect(backoff.mayStart(0)).toBe(true);
    expect(backoff.consecutiveFailures).toBe(0);
    expect(backoff.lastFailure).toBeUndefined();
  });

  it("doubles the wait after each consecutive failure, from the base", () => {
    const backoff = new StartBackoff(100, 60_000);
    expect(failInSteps(backoff, 5)).toEqual([100, 200, 400, 800, 1600]);
    expect(backoff.consecutiveFailures).toBe(5);
  });

  it("caps the wait at the maximum", () => {
    const backoff = new StartBackoff(1_000, 5_000);
    expect(failInSteps(backoff, 8)).toEqual([1_000, 2_000, 4_000, 5_000, 5_000, 5_000, 5_000, 5_000]);
  });

  it("never overflows into Infinity or NaN after very many failures", () => {
    const backoff = new StartBackoff(1_000, 300_000);
    expect(failInSteps(backoff, 2_000).at(-1)).toBe(300_000);
  });

  it("refuses a start until the wait has passed, measured from the failure", () => {
    const backoff = new StartBackoff(1_000, 60_000);
    backoff.failed(10_000);
    expect(backoff.mayStart(10_000)).toBe(false);
    expect(backoff.mayStart(10_999)).toBe(false);
    expect(backoff.mayStart(11_000)).toBe(true);
    backoff.failed(11_000);
    expect(backoff.mayStart(12_999)).toBe(false);
    expect(backoff.mayStart(13_000)).toBe(true);
  });

  it("a failure during the wait is no new step: the wait and the count stay, the reason is kept", () => {
    const backoff = new StartBackoff(1_000, 60_000);
    expect(backoff.failed(0, "first")).toEqual({ delayMs: 1_000, newStep: true });
    // A second start begun together, or a client's cold start, fails meanwhile.
    expect(backoff.failed(400, "second")).toEqual({ delayMs: 600, newStep: false });
    expect(backoff.consecutiveFailures).toBe(1);
    expect(backoff.mayStart(999)).toBe(false);
    expect(backoff.mayStart(1_000)).toBe(true);
    expect(backoff.lastFailure).toEqual({
      message: "second",
      at: 400,
      nextAttemptAt: 1_000,
      consecutiveFailures: 1,
    });
    expect(backoff.failed(1_000, "third")).toEqual({ delayMs: 2_000, newStep: true });
  });

  it("keeps the reason on one bounded line", () => {
    const backoff = new StartBackoff();
    backoff.failed(0, `no such image\n  sandpool/x:1 ${"y".repeat(2_000)}`);
    const { message } = backoff.lastFailure!;
    expect(message.startsWith("no such image sandpool/x:1 y")).toBe(true);
    expect(message).not.toContain("\n");
    expect(message.length).toBe(500);
  });

  it("one success resets the count, the wait and the reason", () => {
    const backoff = new StartBackoff(1_000, 60_000);
    failInSteps(backoff, 3);
    backoff.succeeded(9_000);
    expect(backoff.consecutiveFailures).toBe(0);
    expect(backoff.mayStart(0)).toBe(true);
    expect(backoff.lastFailure).toBeUndefined();
    expect(backoff.lastSuccessAt).toBe(9_000);
    expect(backoff.failed(9_500).delayMs).toBe(1_000);
  });

  it("defaults to 1 s doubling up to 5 minutes", () => {
    const backoff = new StartBackoff();
    const delays = failInSteps(backoff, 22);
    expect(delays[0]).toBe(1_000);
    expect(delays.at(-1)).toBe(300_000);
  });
});
