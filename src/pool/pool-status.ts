/**
 * A pool as operators see it (`GET /admin/v1/pools`): its spec, the sizes in force and as
 * configured, and what it holds right now across replicas (from the coordination store),
 * with the lease and start counts of the replica that answers.
 */
import type { PoolSpec } from "../runtime/sandbox-runtime.js";
import type { CoordinationStore } from "../store/coordination/coordination-store.js";
import type { PoolSizeOverride } from "../store/sql/pool-size-repository.js";
import type { PoolManager } from "./pool-manager.js";
import type { PoolSizes, RuntimePoolSizes } from "./pool-sizes.js";

export interface PoolStatus extends PoolSpec {
  /** `minIdle` and `maxTotal` (from PoolSpec) are the sizes in force; these are the configuration's. */
  configured: PoolSizes;
  /** The run-time resize in force (null sizes: as configured), or null. */
  override: PoolSizeOverride | null;
  /** Started sandboxes waiting for a session (every replica's). */
  idle: number;
  /** Sandboxes serving a session (every replica's). */
  leased: number;
  /** Members neither idle nor leased: being started by some replica. */
  starting: number;
  /** Sandboxes counted against `maxTotal`: idle, leased and starting, across replicas. */
  members: number;
  /** Counted by the replica that answers, since it started. */
  warmLeases: number;
  coldLeases: number;
  warmupFailures: number;
  /** warmLeases / (warmLeases + coldLeases), null before the first lease. */
  warmHitRate: number | null;
}

export async function poolStatus(
  pools: PoolManager,
  sizes: RuntimePoolSizes | undefined,
  store: CoordinationStore,
  now: number = Date.now(),
): Promise<PoolStatus[]> {
  const leases = await store.listLeases();
  return Promise.all(
    pools.list().map(async (pool) => {
      const idle = (await store.listIdle(pool.name)).length;
      const members = await store.countMembers(pool.name, now);
      const leased = leases.filter((lease) => lease.pool === pool.name).length;
      const counters = pools.countersOf(pool.name);
      const leasesSeen = counters.warmLeases + counters.coldLeases;
      const view = sizes?.view(pool.name);
      return {
        ...pool,
        ...pools.sizeOf(pool),
        configured: { minIdle: pool.minIdle, maxTotal: pool.maxTotal },
        override: view?.override ?? null,
        idle,
        leased,
        starting: Math.max(0, members - idle - leased),
        members,
        ...counters,
        warmHitRate: leasesSeen === 0 ? null : counters.warmLeases / leasesSeen,
      };
    }),
  );
}
