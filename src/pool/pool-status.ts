/**
 * A pool as operators see it (`GET /admin/v1/pools`): its spec, the sizes in force and as
 * configured, the effective minIdle that demand raises it to, what it holds right now across
 * replicas (from the coordination store), the deployment's lease and start counts (every
 * replica's, shared by src/pool/pool-demand-sync.ts) and, while its starts fail, why.
 */
import type { z } from "zod";
import type { LeaseStore } from "../store/coordination/lease-store.js";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";
import { runsASandbox } from "../store/coordination/records.js";
import type { RuntimePoolSizes } from "./pool-sizes.js";
import type { poolStatusSchema } from "./pool-status-schema.js";
import type { PoolFigures } from "./sandbox-pool.js";

/** A pool as operators see it: the admin API's schema is its one description. */
export type PoolStatus = z.output<typeof poolStatusSchema>;

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
        override: view?.override
          ? { ...view.override, updatedAt: view.override.updatedAt.toISOString() }
          : null,
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
