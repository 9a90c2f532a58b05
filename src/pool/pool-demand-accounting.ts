/**
 * A pool family's demand accounting on one replica: what it leased and failed to start
 * (its counters), the refill times it measured and has not shared yet, and the deployment's
 * counts as last read from the store, which size each pool's effective minIdle
 * (pool-demand.ts). PoolDemandSync (pool-demand-sync.ts) exchanges them with the other
 * replicas; the pool status reads them. Kept apart from the pools that lease and warm, which
 * only report into it.
 */
import type { PoolSpec } from "../runtime/sandbox-runtime.js";
import type {
  PoolDemandDelta,
  PoolDemandTotals,
  PoolStartFailure,
} from "../store/coordination/pool-demand-exchange.js";
import { PoolDemand, type PoolDemandView, REFILL_WINDOW } from "./pool-demand.js";
import type { PoolSizes } from "./pool-sizes.js";
import type { StartFailure } from "./start-backoff.js";

/** What this replica has seen of a pool since it started. */
export interface PoolCounters {
  /** Leases of a fresh sandbox warm-up had started: what the pool's demand sizes it for. */
  warmLeases: number;
  /**
   * Leases that found nothing ready: cold-started, or queued at the start gate in a burst
   * (counted as they queue, whether served or refused: the burst reserve sizes by demand).
   */
  coldLeases: number;
  warmupFailures: number;
  /**
   * Leases of a sandbox parked by the workspace's earlier session: they take no fresh
   * sandbox, so they count in neither the warm hit rate nor the demand for warm ones.
   */
  reusedLeases: number;
}

/** The counters every replica adds to the deployment's (src/pool/pool-demand-sync.ts). */
export type SharedPoolCounters = Omit<PoolCounters, "reusedLeases">;

/** This replica's latest start outcomes of a pool (its start back-off), shared with the others. */
export interface StartOutcomes {
  lastFailure?: StartFailure;
  lastSuccessAt?: number;
}

const NO_COUNTS: PoolCounters = { warmLeases: 0, coldLeases: 0, warmupFailures: 0, reusedLeases: 0 };

export class PoolDemandAccounting {
  private readonly counters = new Map<string, PoolCounters>();
  private readonly demand = new Map<string, PoolDemand>();
  /** Refill times measured here and not yet shared. */
  private readonly refills = new Map<string, number[]>();
  /** The deployment's counts as last read from the store. */
  private readonly deployment = new Map<string, PoolDemandTotals>();

  /** `startsOf`: the pool's start outcomes on this replica, when it starts sandboxes itself. */
  constructor(
    pools: PoolSpec[],
    private readonly startsOf: (name: string) => StartOutcomes | undefined = () => undefined,
  ) {
    for (const pool of pools) {
      this.counters.set(pool.name, { ...NO_COUNTS });
      this.demand.set(pool.name, new PoolDemand(pool.demand ?? true));
      this.refills.set(pool.name, []);
    }
  }

  countLease(name: string, leased: { warm: boolean; reused: boolean }): void {
    const counters = this.counters.get(name);
    if (counters) counters[leased.reused ? "reusedLeases" : leased.warm ? "warmLeases" : "coldLeases"]++;
  }

  countWarmupFailure(name: string): void {
    const counters = this.counters.get(name);
    if (counters) counters.warmupFailures++;
  }

  /** A sandbox started and ready after `ms`: what the p95 refill time is taken over. */
  recordRefill(name: string, ms: number): void {
    const pending = this.refills.get(name);
    if (!pending) return;
    pending.push(ms);
    if (pending.length > REFILL_WINDOW) pending.splice(0, pending.length - REFILL_WINDOW);
  }

  /** Leases and failed starts of a pool on this replica since it started. */
  countersOf(name: string): PoolCounters {
    return { ...(this.counters.get(name) ?? NO_COUNTS) };
  }

  /** The minIdle warm-up keeps: the size in force, raised by the deployment's demand. */
  effectiveMinIdle(pool: PoolSpec, sizes: PoolSizes): number {
    return this.demand.get(pool.name)?.effectiveMinIdle(sizes) ?? sizes.minIdle;
  }

  /** The pool's demand (lease rate, p95 refill time) as this replica last computed it. */
  demandOf(name: string): PoolDemandView | undefined {
    return this.demand.get(name)?.view();
  }

  /**
   * What this replica has to add to the deployment's counts: its counters (the caller
   * subtracts what it already sent), the refill times measured since the last call (taken:
   * give them back with `returnRefills` if the exchange fails), and its start failure or
   * success, which the store keeps only when newer than what it holds.
   */
  takeDemandDelta(name: string, alreadySent: SharedPoolCounters): PoolDemandDelta {
    const counters = this.countersOf(name);
    const refillMs = this.refills.get(name) ?? [];
    this.refills.set(name, []);
    const starts = this.startsOf(name);
    const failure = starts?.lastFailure;
    return {
      warmLeases: counters.warmLeases - alreadySent.warmLeases,
      coldLeases: counters.coldLeases - alreadySent.coldLeases,
      warmupFailures: counters.warmupFailures - alreadySent.warmupFailures,
      refillMs,
      ...(failure ? { startFailure: failure } : {}),
      ...(starts?.lastSuccessAt !== undefined ? { startSucceededAt: starts.lastSuccessAt } : {}),
    };
  }

  returnRefills(name: string, refillMs: number[]): void {
    const pending = this.refills.get(name);
    if (pending) pending.unshift(...refillMs.slice(-REFILL_WINDOW));
  }

  /** Takes in the deployment's counts of a pool, as the store answered them at `at`. */
  observeDeployment(name: string, totals: PoolDemandTotals, at: number): void {
    this.deployment.set(name, totals);
    this.demand.get(name)?.observe(totals, at);
  }

  /** The deployment's counts of a pool as last read, undefined before the first exchange. */
  deploymentOf(name: string): PoolDemandTotals | undefined {
    const totals = this.deployment.get(name);
    return totals ? structuredClone(totals) : undefined;
  }

  /** The failed start the deployment last shared for a pool (any replica's). */
  sharedStartFailure(name: string): PoolStartFailure | undefined {
    return this.deployment.get(name)?.startFailure ?? undefined;
  }
}
