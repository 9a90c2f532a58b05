/**
 * Bursts of leases and the engine. An engine starts only so many containers a second however
 * many are asked at once (src/pool/start-rate.ts): a hundred cold starts asked together each
 * take as long as the whole hundred, and here every one of them missed its 30 s deadline (a
 * burst of 100 on a fresh workspace answered 100 times 503). So a lease that finds nothing
 * ready starts a sandbox itself only while the engine absorbs another start; beyond that it
 * waits for the next start of its pool on this replica to end (or a short poll, for what
 * other replicas start) and looks again: by then the pool may have an idle sandbox, or a
 * free start. The starts of a burst then end one after another at the engine's rate, not
 * all together at its end.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { SandpoolError } from "../contract/error-codes.js";
import type { StartRate } from "./start-rate.js";

/**
 * Starts of one pool in flight on one replica at most, before the engine's rate is known
 * (then what the measured rate absorbs, src/pool/start-rate.ts).
 */
export const BURST_STARTS_MAX = 8;

interface NextEnd {
  promise: Promise<void>;
  resolve: () => void;
}

export class StartGate {
  private readonly inFlight = new Map<string, number>();
  private readonly nextEnd = new Map<string, NextEnd>();

  constructor(
    private readonly startRate: Pick<StartRate, "concurrency">,
    private readonly most = BURST_STARTS_MAX,
  ) {}

  /** Starts of `pool` in flight on this replica (every purpose: they share the engine). */
  count(pool: string): number {
    return this.inFlight.get(pool) ?? 0;
  }

  /** Whether a lease may start a sandbox of `pool` now rather than wait for one in flight. */
  mayStart(pool: string): boolean {
    return this.count(pool) < this.startRate.concurrency(this.most);
  }

  /** A start of `pool` begins; call the answer once it ended, however it ended. */
  began(pool: string): () => void {
    this.inFlight.set(pool, this.count(pool) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.inFlight.set(pool, Math.max(0, this.count(pool) - 1));
      const waiting = this.nextEnd.get(pool);
      this.nextEnd.delete(pool);
      waiting?.resolve();
    };
  }

  /** Resolves when the next start of `pool` here ends, or after `pollMs`, whichever is first. */
  async waitForNextEnd(pool: string, pollMs: number): Promise<void> {
    let next = this.nextEnd.get(pool);
    if (!next) {
      let resolve!: () => void;
      const promise = new Promise<void>((settle) => {
        resolve = settle;
      });
      next = { promise, resolve };
      this.nextEnd.set(pool, next);
    }
    const poll = new AbortController();
    await Promise.race([
      next.promise,
      sleep(pollMs, undefined, { signal: poll.signal }).catch(() => undefined),
    ]);
    poll.abort();
  }
}

/** The 503 of a lease that waited at the gate past its pool's cold-start deadline. */
export function startsTooLate(pool: { name: string; coldStartTimeoutMs: number }, where = ""): SandpoolError {
  return new SandpoolError(
    "capacity.exhausted",
    `the '${pool.name}' pool's starts${where} did not keep up within its cold-start deadline (${pool.coldStartTimeoutMs} ms): a larger minIdle keeps more ready`,
    { retryAfterSeconds: 2 },
  );
}
