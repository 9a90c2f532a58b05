/**
 * The demand arithmetic: the lease-rate EWMA (baseline, convergence, decay, independence
 * from the tick interval, a reset total), the p95 over a bounded window, the demanded idle
 * count and its clamp to the sizes in force.
 */
import { describe, expect, it } from "vitest";
import {
  BURST_MEMORY_MS,
  clampToSizes,
  demandedIdle,
  PoolDemand,
  p95,
  peakWithin,
  RateEwma,
  REFILL_WINDOW,
} from "../../../src/pool/pool-demand.js";

/** Feeds `perSecond` leases a second for `seconds`, one total every `tickMs`; answers the last rate. */
function feed(
  ewma: RateEwma,
  from: { total: number; at: number },
  perSecond: number,
  seconds: number,
  tickMs = 1_000,
) {
  let { total, at } = from;
  let rate = ewma.perSecond;
  for (let elapsed = 0; elapsed < seconds * 1000; elapsed += tickMs) {
    at += tickMs;
    total += (perSecond * tickMs) / 1000;
    rate = ewma.observe(total, at);
  }
  return { rate, total, at };
}

describe("RateEwma", () => {
  it("takes the first total as a baseline, not as a burst", () => {
    const ewma = new RateEwma(30_000);
    expect(ewma.observe(5_000, 0)).toBe(0);
    expect(ewma.perSecond).toBe(0);
  });

  it("converges on a steady rate and decays to nothing when leases stop", () => {
    const ewma = new RateEwma(30_000);
    ewma.observe(0, 0);
    const busy = feed(ewma, { total: 0, at: 0 }, 4, 300);
    expect(busy.rate).toBeCloseTo(4, 2);
    // One time constant after leases stop, about a third (1/e) is left; after ten, nothing.
    const quiet = feed(ewma, busy, 0, 30);
    expect(quiet.rate).toBeCloseTo(4 / Math.E, 1);
    expect(feed(ewma, quiet, 0, 270).rate).toBeLessThan(0.001);
  });

  it("rises within seconds of a burst, but less than the burst's instant rate", () => {
    const ewma = new RateEwma(30_000);
    ewma.observe(0, 0);
    const { rate } = feed(ewma, { total: 0, at: 0 }, 10, 5);
    expect(rate).toBeGreaterThan(1);
    expect(rate).toBeLessThan(10);
  });

  it("answers the same whatever the tick interval", () => {
    const every100ms = new RateEwma(30_000);
    const every5s = new RateEwma(30_000);
    every100ms.observe(0, 0);
    every5s.observe(0, 0);
    const fine = feed(every100ms, { total: 0, at: 0 }, 3, 20, 100);
    const coarse = feed(every5s, { total: 0, at: 0 }, 3, 20, 5_000);
    expect(fine.rate).toBeCloseTo(coarse.rate, 6);
  });

  it("ignores a repeated instant and restarts from a total that went down", () => {
    const ewma = new RateEwma(30_000);
    ewma.observe(10, 0);
    ewma.observe(20, 1_000);
    const rate = ewma.perSecond;
    expect(ewma.observe(25, 1_000)).toBe(rate); // no time passed
    expect(ewma.observe(0, 2_000)).toBeLessThan(rate); // counts expired: no negative rate
    expect(ewma.perSecond).toBeGreaterThanOrEqual(0);
  });
});

describe("p95", () => {
  it("is the nearest-rank 95th percentile", () => {
    expect(p95([])).toBeUndefined();
    expect(p95([7])).toBe(7);
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1).reverse();
    expect(p95(hundred)).toBe(95);
    expect(p95([1, 2, 3, 4, 1_000])).toBe(1_000);
  });
});

describe("demandedIdle and clampToSizes", () => {
  it("is the leases expected during one refill, rounded up; negligible demand is none", () => {
    expect(demandedIdle(2, 1.5)).toBe(3);
    expect(demandedIdle(2, 1.6)).toBe(4);
    expect(demandedIdle(0.05, 1)).toBe(0);
    expect(demandedIdle(0.2, 1)).toBe(1);
    expect(demandedIdle(5, undefined)).toBe(0); // no refill measured yet
  });

  it("never goes below minIdle nor above maxTotal", () => {
    expect(clampToSizes(0, { minIdle: 2, maxTotal: 10 })).toBe(2);
    expect(clampToSizes(6, { minIdle: 2, maxTotal: 10 })).toBe(6);
    expect(clampToSizes(60, { minIdle: 2, maxTotal: 10 })).toBe(10);
  });
});

describe("PoolDemand", () => {
  const sizes = { minIdle: 1, maxTotal: 8 };
  const totals = (leases: number, refillMs: number[]) => ({ warmLeases: leases, coldLeases: 0, refillMs });

  it("raises the effective minIdle with the deployment's rate and the p95 refill time, clamped", () => {
    const demand = new PoolDemand(true, 1_000); // a short time constant: converges within the test
    expect(demand.effectiveMinIdle(sizes)).toBe(1);
    const refills = [...Array(19).fill(500), 2_000]; // nearest rank 19 of 20: 500 ms
    let leases = 0;
    for (let at = 0; at <= 20_000; at += 1_000, leases += 6) demand.observe(totals(leases, refills), at);
    expect(demand.view().leasesPerSecond).toBeCloseTo(6, 3);
    expect(demand.view().refillSecondsP95).toBe(0.5);
    expect(demand.effectiveMinIdle(sizes)).toBe(3); // 6/s x 0.5 s
    expect(demand.effectiveMinIdle({ minIdle: 5, maxTotal: 8 })).toBe(5);
    expect(demand.effectiveMinIdle({ minIdle: 0, maxTotal: 2 })).toBe(2);
  });

  it("keeps minIdle when demand is off", () => {
    const demand = new PoolDemand(false, 1_000);
    let leases = 0;
    for (let at = 0; at <= 10_000; at += 1_000, leases += 50) demand.observe(totals(leases, [1_000]), at);
    expect(demand.effectiveMinIdle(sizes)).toBe(1);
  });

  it("takes the p95 over at most the window's newest refill times", () => {
    const demand = new PoolDemand(true);
    // Newest first: a window of fast refills, then a long tail of old slow ones beyond it.
    demand.observe(totals(0, [...Array(REFILL_WINDOW).fill(100), ...Array(500).fill(9_000)]), 0);
    expect(demand.view().refillSecondsP95).toBe(0.1);
  });
});

describe("the burst reserve", () => {
  const sizes = { minIdle: 2, maxTotal: 200 };
  const totals = (leases: number, refillMs: number[]) => ({ warmLeases: leases, coldLeases: 0, refillMs });

  it("peakWithin is the most arrivals within any span", () => {
    const samples = [
      { at: 1_000, added: 3 },
      { at: 2_000, added: 40 },
      { at: 3_000, added: 60 },
      { at: 9_000, added: 5 },
    ];
    expect(peakWithin(samples, 1_000)).toBe(60);
    expect(peakWithin(samples, 2_000)).toBe(100);
    expect(peakWithin(samples, 10_000)).toBe(108);
    expect(peakWithin([], 5_000)).toBe(0);
  });

  it("keeps a burst's size warm for ten minutes after it, where the average has long decayed", () => {
    const demand = new PoolDemand(true, 1_000);
    const refills = [4_000]; // a burst's starts queue: each refill took 4 s
    demand.observe(totals(0, refills), 0);
    // A hundred leases within three seconds, then nothing.
    demand.observe(totals(30, refills), 1_000);
    demand.observe(totals(70, refills), 2_000);
    demand.observe(totals(100, refills), 3_000);
    for (let at = 4_000; at < BURST_MEMORY_MS; at += 1_000) demand.observe(totals(100, refills), at);
    expect(demand.view().leasesPerSecond).toBeLessThan(0.01);
    expect(demand.view().burstReserve).toBe(100);
    expect(demand.effectiveMinIdle(sizes)).toBe(100);
    expect(demand.effectiveMinIdle({ minIdle: 2, maxTotal: 40 })).toBe(40);
    // Ten minutes after the burst it is forgotten.
    demand.observe(totals(100, refills), BURST_MEMORY_MS + 4_000);
    expect(demand.view().burstReserve).toBe(0);
    expect(demand.effectiveMinIdle(sizes)).toBe(2);
  });

  it("is Little's figure for a steady rate", () => {
    const demand = new PoolDemand(true, 1_000);
    let leases = 0;
    for (let at = 0; at <= 20_000; at += 1_000, leases += 6) demand.observe(totals(leases, [2_000]), at);
    expect(demand.view().burstReserve).toBe(12); // 6/s within 2 s
    expect(demand.effectiveMinIdle(sizes)).toBe(12);
  });
});
