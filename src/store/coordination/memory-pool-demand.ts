/** The memory store's pool counts: the same semantics as exchange-pool-demand-2.lua, in a map. */
import type {
  PoolDemandDelta,
  PoolDemandExchange,
  PoolDemandTotals,
  PoolStartFailure,
} from "./pool-demand-exchange.js";

interface PoolCounts {
  warmLeases: number;
  coldLeases: number;
  warmupFailures: number;
  refillMs: number[];
  failure: PoolStartFailure | undefined;
  succeededAt: number;
}

export class MemoryPoolDemand implements PoolDemandExchange {
  private readonly pools = new Map<string, PoolCounts>();

  async exchangePoolDemand(pool: string, delta: PoolDemandDelta, window: number): Promise<PoolDemandTotals> {
    let counts = this.pools.get(pool);
    if (!counts) {
      counts = {
        warmLeases: 0,
        coldLeases: 0,
        warmupFailures: 0,
        refillMs: [],
        failure: undefined,
        succeededAt: 0,
      };
      this.pools.set(pool, counts);
    }
    counts.warmLeases += Math.max(0, delta.warmLeases);
    counts.coldLeases += Math.max(0, delta.coldLeases);
    counts.warmupFailures += Math.max(0, delta.warmupFailures);
    if (delta.startFailure && delta.startFailure.at > (counts.failure?.at ?? 0))
      counts.failure = { ...delta.startFailure };
    if (delta.startSucceededAt !== undefined && delta.startSucceededAt > counts.succeededAt)
      counts.succeededAt = delta.startSucceededAt;
    // Pushed one by one on the front, like LPUSH: the last of the batch ends up newest.
    for (const ms of delta.refillMs) counts.refillMs.unshift(Math.round(ms));
    counts.refillMs.length = Math.min(counts.refillMs.length, window);
    const failure = counts.failure;
    return {
      warmLeases: counts.warmLeases,
      coldLeases: counts.coldLeases,
      warmupFailures: counts.warmupFailures,
      refillMs: [...counts.refillMs],
      startFailure: failure && failure.at > counts.succeededAt ? { ...failure } : null,
    };
  }
}
