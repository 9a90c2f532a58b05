import { describe, expect, it } from "vitest";
import { StartBackoff } from "../../../src/pool/start-backoff.js";

describe("StartBackoff", () => {
  it("allows a start before any failure", () => {
    const backoff = new StartBackoff();
    expect(backoff.mayStart(0)).toBe(true);
    expect(backoff.consecutiveFailures).toBe(0);
  });

  it("doubles the wait after each consecutive failure, from the base", () => {
    const backoff = new StartBackoff(100, 60_000);
    expect([1, 2, 3, 4, 5].map(() => backoff.failed(0))).toEqual([100, 200, 400, 800, 1600]);
    expect(backoff.consecutiveFailures).toBe(5);
  });

  it("caps the wait at the maximum", () => {
    const backoff = new StartBackoff(1_000, 5_000);
    const delays = Array.from({ length: 8 }, () => backoff.failed(0));
    expect(delays).toEqual([1_000, 2_000, 4_000, 5_000, 5_000, 5_000, 5_000, 5_000]);
  });

  it("never overflows into Infinity or NaN after very many failures", () => {
    const backoff = new StartBackoff(1_000, 300_000);
    let last = 0;
    for (let i = 0; i < 2_000; i++) last = backoff.failed(0);
    expect(last).toBe(300_000);
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

  it("one success resets the count and the wait", () => {
    const backoff = new StartBackoff(1_000, 60_000);
    backoff.failed(0);
    backoff.failed(0);
    backoff.failed(0);
    backoff.succeeded();
    expect(backoff.consecutiveFailures).toBe(0);
    expect(backoff.mayStart(0)).toBe(true);
    expect(backoff.failed(0)).toBe(1_000);
  });

  it("defaults to 1 s doubling up to 5 minutes", () => {
    const backoff = new StartBackoff();
    expect(backoff.failed(0)).toBe(1_000);
    for (let i = 0; i < 20; i++) backoff.failed(0);
    expect(backoff.failed(0)).toBe(300_000);
  });
});
