/**
 * The machine's share of warm-up: sandbox starts for warm-up in flight at once on this
 * replica, all pools together, on top of each pool's own `warmupConcurrency`. Starting a
 * sandbox costs CPU (the engine, the runtime, the server's start-up), and the leases served
 * meanwhile need it too, so the default is the machine's CPU count. Starts a client waits
 * for (a cold start) never queue behind it; warm-up simply takes what is free and comes
 * back on its next tick.
 */
import { availableParallelism } from "node:os";

export function defaultWarmupStarts(): number {
  return Math.max(1, availableParallelism());
}

export class WarmupLimiter {
  private inFlight = 0;

  constructor(readonly max: number = defaultWarmupStarts()) {}

  /** Takes up to `wanted` places; answers how many it got (0 when the machine is busy). */
  tryAcquire(wanted: number): number {
    const granted = Math.max(0, Math.min(wanted, this.max - this.inFlight));
    this.inFlight += granted;
    return granted;
  }

  release(count = 1): void {
    this.inFlight = Math.max(0, this.inFlight - count);
  }

  get active(): number {
    return this.inFlight;
  }
}
