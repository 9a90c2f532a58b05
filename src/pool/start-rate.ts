/**
 * The engine's start throughput as this replica sees it, from its own starts (warm-up and
 * cold, every pool: they share the engine). An engine starts only so many containers a
 * second however many are asked at once (here about two: 8 in parallel take 4 s, one alone
 * 0.8 s), so starting more at once than it can take only makes each start slower, and a
 * waiting lease gets its sandbox later. Warm-up therefore keeps in flight what the engine's
 * throughput and an unhurried start's time say it absorbs (Little's law), never more than the
 * pool's `warmupConcurrency`.
 *
 * Throughput is the starts completed per second of time with any start in flight, over the
 * last WINDOW starts, so idle time between bursts does not count against the engine.
 *
 * The first warm-up batch at start-up is the probe: a replica's first look at its pools
 * starts `warmupConcurrency` sandboxes at once (two by default), and once two starts have
 * completed the rate is known (shown in the admin pools view) and sizes warm-up from then on.
 * No start is made only to measure: on this engine a probe container would cost what a
 * warm-up start costs, and the warm-up starts are needed anyway.
 */

/** Starts the figures are taken over. */
export const WINDOW = 30;
/** Fewer starts than this say nothing yet (the first batch at start-up gives them): the configured concurrency holds. */
const MIN_SAMPLES = 2;
/** Headroom over the estimate: a start's time varies, and a slot left idle is a start lost. */
const HEADROOM = 1.5;

interface Sample {
  /** How long this start took. */
  ms: number;
  /** Time with any start in flight since the start before it completed. */
  busyMs: number;
}

export interface StartRateView {
  /** Starts per second of busy time, null before enough starts. */
  startsPerSecond: number | null;
  /** The quickest recent start (ms): what one costs when the engine is not queueing. */
  quickestStartMs: number | null;
}

export class StartRate {
  private readonly samples: Sample[] = [];
  private inFlight = 0;
  /** Busy time accrued since the last completion, and since when it runs. */
  private busyMs = 0;
  private busySince: number | undefined;

  constructor(private readonly now: () => number = Date.now) {}

  /** A start begins; call `ended` with what it returned (or when it failed). */
  began(): () => void {
    const at = this.now();
    if (this.inFlight++ === 0) this.busySince = at;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const now = this.now();
      this.accrue(now);
      this.samples.push({ ms: now - at, busyMs: this.busyMs });
      if (this.samples.length > WINDOW) this.samples.shift();
      this.busyMs = 0;
      if (--this.inFlight === 0) this.busySince = undefined;
    };
  }

  /** The warm-up starts to keep in flight: the engine's absorbing capacity, at most `configured`. */
  concurrency(configured: number): number {
    const { startsPerSecond, quickestStartMs } = this.view();
    if (startsPerSecond === null || quickestStartMs === null) return configured;
    const absorbed = Math.ceil((startsPerSecond * quickestStartMs * HEADROOM) / 1000);
    return Math.max(1, Math.min(configured, absorbed));
  }

  view(): StartRateView {
    if (this.samples.length < MIN_SAMPLES) return { startsPerSecond: null, quickestStartMs: null };
    const busy = this.samples.reduce((sum, sample) => sum + sample.busyMs, 0);
    return {
      startsPerSecond: busy > 0 ? (this.samples.length * 1000) / busy : null,
      quickestStartMs: Math.min(...this.samples.map((sample) => sample.ms)),
    };
  }

  private accrue(now: number): void {
    if (this.busySince === undefined) return;
    this.busyMs += now - this.busySince;
    this.busySince = now;
  }
}
