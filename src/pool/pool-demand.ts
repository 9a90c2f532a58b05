/**
 * Demand-driven warm pools. A pool's effective `minIdle` follows the deployment's lease rate:
 * the sandboxes leased while one is being refilled (Little's law: leases per second times the
 * p95 refill time, the time to start a sandbox and create its inner session), rounded up and
 * clamped to [minIdle, maxTotal] as in force. The rate is an exponentially weighted moving
 * average of the deployment's lease count (every replica's, summed in the coordination
 * store), so a burst raises the pool within seconds and a quiet spell lowers it smoothly.
 *
 * An average undersizes for bursts: agents fan out, a hundred sessions at once, and an engine
 * starts only a few containers a second. So the pool also keeps a burst reserve: the most
 * leases that arrived within one refill time at any moment of the last `BURST_MEMORY_MS`
 * (the recent peak). For a steady rate that is Little's figure again; after a burst of a
 * hundred it is about a hundred, held for ten minutes, so the next burst finds them warm.
 */
import type { PoolDemandTotals } from "../store/coordination/pool-demand-exchange.js";
import type { PoolSizes } from "./pool-sizes.js";

/** How quickly the lease rate forgets: the weight of older samples halves every ~21 s. */
export const RATE_TIME_CONSTANT_MS = 30_000;
/** How many recent refill times the p95 is taken over (every replica's together). */
export const REFILL_WINDOW = 100;
/** How often a replica exchanges its counts (pool-demand-sync.ts): the lag of the deployment's view. */
export const DEMAND_SYNC_EVERY_MS = 1_000;
/** How long a burst is remembered: the reserve it sets stays this long after it. */
export const BURST_MEMORY_MS = 10 * 60_000;
/** Expected leases during one refill below this keep no extra sandbox warm. */
const NEGLIGIBLE_DEMAND = 0.1;

/**
 * An exponentially weighted moving average of a rate, fed with a growing total at irregular
 * times: each sample's weight depends on the time it covers, so the tick interval does not
 * change the answer.
 */
export class RateEwma {
  private last: { total: number; at: number } | undefined;
  private value = 0;

  constructor(private readonly timeConstantMs = RATE_TIME_CONSTANT_MS) {}

  /** Feeds the total seen at `now`; answers the rate per second. */
  observe(total: number, now: number): number {
    const last = this.last;
    this.last = { total, at: now };
    if (!last) return this.value; // the first total is a baseline, not a burst
    const elapsed = now - last.at;
    if (elapsed <= 0) {
      this.last = last; // same instant: wait for time to pass
      return this.value;
    }
    // A total that went down (the shared counts expired) restarts from here.
    const added = Math.max(0, total - last.total);
    const instant = (added * 1000) / elapsed;
    const alpha = 1 - Math.exp(-elapsed / this.timeConstantMs);
    this.value += alpha * (instant - this.value);
    return this.value;
  }

  /** Leases per second, 0 before two observations. */
  get perSecond(): number {
    return this.value;
  }
}

/** The 95th percentile (nearest rank) of `values`, undefined for none. */
export function p95(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil(0.95 * sorted.length) - 1];
}

/** Sandboxes wanted ready so that the leases arriving during one refill find one each. */
export function demandedIdle(leasesPerSecond: number, refillSeconds: number | undefined): number {
  if (refillSeconds === undefined) return 0;
  const expected = leasesPerSecond * refillSeconds;
  return expected < NEGLIGIBLE_DEMAND ? 0 : Math.ceil(expected);
}

/** The demanded number within the pool's sizes in force: never below minIdle, never above maxTotal. */
export function clampToSizes(demanded: number, sizes: PoolSizes): number {
  return Math.min(sizes.maxTotal, Math.max(sizes.minIdle, demanded));
}

/**
 * The most leases counted within any `spanMs` of the samples' times: arrivals are counted
 * per exchange (about a second apart), so a span is taken as the exchanges it covers.
 */
export function peakWithin(samples: readonly LeaseSample[], spanMs: number): number {
  let peak = 0;
  let sum = 0;
  let from = 0;
  for (const sample of samples) {
    sum += sample.added;
    while (samples[from]!.at <= sample.at - spanMs) sum -= samples[from++]!.added;
    peak = Math.max(peak, sum);
  }
  return peak;
}

/** Leases the deployment counted between one exchange and the one at `at`. */
export interface LeaseSample {
  at: number;
  added: number;
}

/** What a pool's demand looks like now, for the admin API and metrics. */
export interface PoolDemandView {
  /** The deployment's leases per second (0 before two exchanges). */
  leasesPerSecond: number;
  /** The most leases within one refill time in the last ten minutes: the burst reserve. */
  burstReserve: number;
  /** The p95 of the recent refill times, null before the first. */
  refillSecondsP95: number | null;
}

/** One pool's demand as one replica tracks it, from the deployment's totals. */
export class PoolDemand {
  private readonly rate: RateEwma;
  private refillMs: number[] = [];
  private readonly arrivals: LeaseSample[] = [];
  private lastTotal: number | undefined;

  constructor(
    readonly enabled: boolean,
    timeConstantMs = RATE_TIME_CONSTANT_MS,
  ) {
    this.rate = new RateEwma(timeConstantMs);
  }

  /** Takes in the deployment's totals as read at `now`. */
  observe(totals: Pick<PoolDemandTotals, "warmLeases" | "coldLeases" | "refillMs">, now: number): void {
    const total = totals.warmLeases + totals.coldLeases;
    this.rate.observe(total, now);
    // The first total is a baseline; one that went down (the counts expired) starts afresh.
    if (this.lastTotal !== undefined && total > this.lastTotal) {
      this.arrivals.push({ at: now, added: total - this.lastTotal });
    }
    this.lastTotal = total;
    while (this.arrivals.length > 0 && this.arrivals[0]!.at <= now - BURST_MEMORY_MS) this.arrivals.shift();
    this.refillMs = totals.refillMs.slice(0, REFILL_WINDOW);
  }

  /** The minIdle warm-up tops the pool up to. */
  effectiveMinIdle(sizes: PoolSizes): number {
    if (!this.enabled) return sizes.minIdle;
    const average = demandedIdle(this.rate.perSecond, this.refillSecondsP95());
    return clampToSizes(Math.max(average, this.burstReserve()), sizes);
  }

  /** The recent peak: the most leases that arrived within one refill time (none before one). */
  burstReserve(): number {
    const refillSeconds = this.refillSecondsP95();
    if (refillSeconds === undefined) return 0;
    // Arrivals are known per exchange (a second): a shorter refill takes its share of one.
    const spanMs = Math.max(refillSeconds * 1000, DEMAND_SYNC_EVERY_MS);
    const expected =
      peakWithin(this.arrivals, spanMs) * Math.min(1, (refillSeconds * 1000) / DEMAND_SYNC_EVERY_MS);
    return expected < NEGLIGIBLE_DEMAND ? 0 : Math.ceil(expected);
  }

  view(): PoolDemandView {
    return {
      leasesPerSecond: this.rate.perSecond,
      burstReserve: this.burstReserve(),
      refillSecondsP95: this.refillSecondsP95() ?? null,
    };
  }

  private refillSecondsP95(): number | undefined {
    const ms = p95(this.refillMs);
    return ms === undefined ? undefined : ms / 1000;
  }
}
