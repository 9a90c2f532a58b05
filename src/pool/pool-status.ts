/**
 * A pool as operators see it (`GET /admin/v1/pools`): its spec, the sizes in force and as
 * configured, the effective minIdle that demand raises it to, what it holds right now across
 * replicas (from the coordination store), the deployment's lease and start counts (every
 * replica's, shared by src/pool/pool-demand-sync.ts) and, while its starts fail, why.
 */
import type { PoolSpec } from "../runtime/sandbox-runtime.js";
import type { LeaseStore } from "../store/coordination/lease-store.js";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";
import { runsASandbox } from "../store/coordination/records.js";
import type { PoolSizeOverride } from "../store/sql/pool-size-repository.js";
import type { PoolDemandView } from "./pool-demand.js";
import type { PoolCounters } from "./pool-demand-accounting.js";
import type { PoolSizes, RuntimePoolSizes } from "./pool-sizes.js";
import type { PoolFigures } from "./sandbox-pool.js";
import type { StartRateView } from "./start-rate.js";

/** The failed start a pool backs off from, with ISO times. */
export interface PoolStartErrorView {
  message: string;
  at: string;
  /** When warm-up tries the pool again. */
  nextAttemptAt: string;
  consecutiveFailures: number;
}

export interface PoolStatus extends PoolSpec {
  /** `minIdle` and `maxTotal` (from PoolSpec) are the sizes in force; these are the configuration's. */
  configured: PoolSizes;
  /** The run-time resize in force (null sizes: as configured), or null. */
  override: PoolSizeOverride | null;
  /** What warm-up keeps idle: minIdle raised by demand, never above maxTotal. */
  effectiveMinIdle: number;
  /** Whether demand raises minIdle (`demand` of the spec) and the demand measured now. */
  leaseDemand: PoolDemandView;
  /**
   * The engine's start throughput as the answering replica measured it (all its pools'
   * starts): warm-up keeps no more starts in flight than it absorbs.
   */
  engineStarts: StartRateView;
  /** Started sandboxes waiting for a session (every replica's). */
  idle: number;
  /** Sandboxes that served a session, scrubbed and waiting for their workspace's next one (src/pool/sandbox-reuse.ts). */
  parked: number;
  /** Sandboxes serving a session (every replica's). */
  leased: number;
  /** Members neither idle, parked nor leased: being started, scrubbed or destroyed by some replica. */
  starting: number;
  /** Sandboxes counted against `maxTotal`: idle, leased and starting, across replicas. */
  members: number;
  /** The deployment's counts: every replica's, since the counts began. */
  warmLeases: number;
  coldLeases: number;
  warmupFailures: number;
  /** warmLeases / (warmLeases + coldLeases), null before the first lease. */
  warmHitRate: number | null;
  /** The counts of the replica that answers, since it started. */
  thisReplica: PoolCounters;
  /** Why the pool's starts fail and when warm-up tries again; null while it starts fine. */
  lastStartError: PoolStartErrorView | null;
}

export async function poolStatus(
  pools: PoolFigures,
  sizes: RuntimePoolSizes | undefined,
  store: PoolLedger & LeaseStore,
  now: number = Date.now(),
): Promise<PoolStatus[]> {
  const leases = await store.listLeases();
  return Promise.all(
    pools.list().map(async (pool) => {
      const idle = (await store.listIdle(pool.name)).length;
      const parked = (await store.listParked(pool.name)).length;
      const members = await store.countMembers(pool.name, now);
      const leased = leases.filter((lease) => lease.pool === pool.name && runsASandbox(lease)).length;
      const local = pools.demand.countersOf(pool.name);
      // The deployment's counts; this replica's own before the first exchange.
      const counts = pools.demand.deploymentOf(pool.name) ?? local;
      const leasesSeen = counts.warmLeases + counts.coldLeases;
      const view = sizes?.view(pool.name);
      const failure = pools.startFailureOf(pool.name);
      return {
        ...pool,
        ...pools.sizeOf(pool),
        configured: { minIdle: pool.minIdle, maxTotal: pool.maxTotal },
        override: view?.override ?? null,
        effectiveMinIdle: pools.effectiveMinIdle(pool),
        demand: pool.demand ?? true,
        leaseDemand: pools.demand.demandOf(pool.name) ?? {
          leasesPerSecond: 0,
          burstReserve: 0,
          refillSecondsP95: null,
        },
        engineStarts: pools.startRateView(),
        idle,
        parked,
        leased,
        starting: Math.max(0, members - idle - parked - leased),
        members,
        warmLeases: counts.warmLeases,
        coldLeases: counts.coldLeases,
        warmupFailures: counts.warmupFailures,
        warmHitRate: leasesSeen === 0 ? null : counts.warmLeases / leasesSeen,
        thisReplica: local,
        lastStartError: failure
          ? {
              message: failure.message,
              at: new Date(failure.at).toISOString(),
              nextAttemptAt: new Date(failure.nextAttemptAt).toISOString(),
              consecutiveFailures: failure.consecutiveFailures,
            }
          : null,
      };
    }),
  );
}
