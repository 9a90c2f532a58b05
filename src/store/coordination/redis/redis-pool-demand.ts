/** The pools' shared demand counts on Redis: one script (exchange-pool-demand-2.lua) per exchange. */
import {
  POOL_DEMAND_TTL_MS,
  type PoolDemandDelta,
  type PoolDemandExchange,
  type PoolDemandTotals,
  type PoolStartFailure,
} from "../pool-demand-exchange.js";
import type { RedisCommands } from "./redis-commands.js";

export class RedisPoolDemand implements PoolDemandExchange {
  constructor(private readonly commands: RedisCommands) {}

  async exchangePoolDemand(pool: string, delta: PoolDemandDelta, window: number) {
    const { keys } = this.commands;
    const failure = delta.startFailure;
    const raw = (await this.commands.script(
      "exchange-pool-demand",
      [keys.demand(pool), keys.refills(pool)],
      [
        delta.warmLeases,
        delta.coldLeases,
        delta.warmupFailures,
        window,
        POOL_DEMAND_TTL_MS,
        failure?.at ?? "",
        failure?.message ?? "",
        failure?.nextAttemptAt ?? "",
        failure?.consecutiveFailures ?? "",
        delta.startSucceededAt ?? "",
        ...delta.refillMs.map((ms) => Math.round(ms)),
      ],
    )) as (string | null | string[])[];
    return demandTotals(raw);
  }
}

/** The exchange script's answer as totals (see exchange-pool-demand-2.lua for its shape). */
function demandTotals(raw: (string | null | string[])[]): PoolDemandTotals {
  const [warm, cold, failures, failureAt, message, nextAttemptAt, consecutive, succeededAt, refills] = raw;
  const count = (value: unknown) => Number(value ?? 0);
  let startFailure: PoolStartFailure | null = null;
  if (typeof failureAt === "string" && Number(failureAt) > count(succeededAt)) {
    startFailure = {
      message: String(message ?? ""),
      at: Number(failureAt),
      nextAttemptAt: count(nextAttemptAt),
      consecutiveFailures: count(consecutive),
    };
  }
  return {
    warmLeases: count(warm),
    coldLeases: count(cold),
    warmupFailures: count(failures),
    refillMs: Array.isArray(refills) ? refills.map(Number) : [],
    startFailure,
  };
}
