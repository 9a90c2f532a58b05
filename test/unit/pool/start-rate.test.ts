/** The engine's start throughput from the pool's own starts, and the warm-up concurrency it allows. */
import { describe, expect, it } from "vitest";
import { StartRate } from "../../../src/pool/start-rate.js";

function clock() {
  let now = 0;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe("StartRate", () => {
  it("says nothing before the first two starts: the configured concurrency holds", () => {
    const c = clock();
    const rate = new StartRate(c.now);
    const ended = rate.began();
    c.advance(500);
    ended();
    expect(rate.view()).toEqual({ startsPerSecond: null, quickestStartMs: null });
    expect(rate.concurrency(8)).toBe(8);
  });

  it("knows the rate from the first warm-up batch at start-up: two starts at once", () => {
    const c = clock();
    const rate = new StartRate(c.now);
    // The default warmupConcurrency, 2, on an engine that starts two a second: both queue.
    const [a, b] = [rate.began(), rate.began()];
    c.advance(500);
    a();
    c.advance(500);
    b();
    expect(rate.view()).toEqual({ startsPerSecond: 2, quickestStartMs: 500 });
    expect(rate.concurrency(8)).toBe(2);
  });

  it("measures an engine that starts two a second however many are asked, and keeps about two in flight", () => {
    const c = clock();
    const rate = new StartRate(c.now);
    // Eight at once, finishing one every 500 ms: the first took 500 ms, the last 4 s.
    const ends = Array.from({ length: 8 }, () => rate.began());
    for (const ended of ends) {
      c.advance(500);
      ended();
    }
    expect(rate.view()).toEqual({ startsPerSecond: 2, quickestStartMs: 500 });
    // 2/s x 0.5 s x 1.5 headroom = 1.5: two in flight absorb it; asking eight only queues.
    expect(rate.concurrency(8)).toBe(2);
    expect(rate.concurrency(1)).toBe(1);
  });

  it("does not count idle time between bursts against the engine", () => {
    const c = clock();
    const rate = new StartRate(c.now);
    for (let burst = 0; burst < 3; burst++) {
      const [a, b] = [rate.began(), rate.began()];
      c.advance(200);
      a();
      b();
      c.advance(60_000); // nothing starts for a minute
    }
    // Two starts per 200 ms of busy time: 10/s, each 200 ms alone.
    expect(rate.view()).toEqual({ startsPerSecond: 10, quickestStartMs: 200 });
    expect(rate.concurrency(16)).toBe(3);
  });
});
