/**
 * Pool counts shared by every replica: leases (warm and cold), failed starts, the recent
 * refill times and the last start failure. No replica writes them on the request path: each
 * keeps its own counts and, on a timer, adds what it counted since its last exchange and
 * reads back the deployment's totals in the same step (src/pool/pool-demand-sync.ts).
 */

/** A pool's last failed start, as any replica saw it. Epoch milliseconds. */
export interface PoolStartFailure {
  message: string;
  at: number;
  /** When warm-up tries this pool again (the failing replica's back-off). */
  nextAttemptAt: number;
  /** Failed starts in a row on that replica. */
  consecutiveFailures: number;
}

/** What one replica adds to a pool's shared counts. */
export interface PoolDemandDelta {
  warmLeases: number;
  coldLeases: number;
  warmupFailures: number;
  /** Refill times (start plus inner session) measured since the last exchange, milliseconds. */
  refillMs: number[];
  /** This replica's latest failed start, if it had one since the last exchange. */
  startFailure?: PoolStartFailure;
  /** When this replica last started a sandbox of the pool, if it did since the last exchange. */
  startSucceededAt?: number;
}

/** A pool's counts summed over every replica, since the deployment first counted them. */
export interface PoolDemandTotals {
  warmLeases: number;
  coldLeases: number;
  warmupFailures: number;
  /** The most recent refill times of any replica, newest first, at most the window asked for. */
  refillMs: number[];
  /** The latest failed start, unless a start succeeded after it (the pool is healthy again). */
  startFailure: PoolStartFailure | null;
}

export interface PoolDemandExchange {
  /**
   * Adds `delta` to the pool's shared counts, keeps its newest `window` refill times, and
   * answers the totals after the addition: one atomic step, one round trip.
   */
  exchangePoolDemand(pool: string, delta: PoolDemandDelta, window: number): Promise<PoolDemandTotals>;
}

/** Counts kept for this long after the last exchange; a deployment that stops counting forgets. */
export const POOL_DEMAND_TTL_MS = 7 * 86_400_000;
