/**
 * Shares each pool's counts between replicas without a command on the request path: every
 * replica counts its own leases, failed starts and refill times in memory, and on its own
 * timer (not a scheduled job, which runs on one replica a tick) adds what it counted since
 * the last exchange to the pool's hash in the coordination store and reads back the
 * deployment's totals in the same script. From those totals every replica computes the same
 * lease rate and so the same effective minIdle; the admin API and the metrics show them.
 */
import type { Logger } from "pino";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { PoolDemandExchange } from "../store/coordination/pool-demand-exchange.js";
import { DEMAND_SYNC_EVERY_MS, REFILL_WINDOW } from "./pool-demand.js";
import type { SharedPoolCounters } from "./pool-demand-accounting.js";
import type { PoolFigures } from "./sandbox-pool.js";

export class PoolDemandSync {
  private readonly sent = new Map<string, SharedPoolCounters>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private failing = false;
  private readonly now: () => number;

  constructor(
    private readonly pools: Pick<PoolFigures, "list" | "demand" | "effectiveMinIdle">,
    private readonly store: PoolDemandExchange,
    private readonly metrics: GatewayMetrics,
    private readonly log: Logger,
    private readonly everyMs = DEMAND_SYNC_EVERY_MS,
    now?: () => number,
  ) {
    this.now = now ?? Date.now;
  }

  /** Exchanges once now (so the first warm-up already knows the deployment), then on a timer. */
  async start(): Promise<void> {
    await this.syncNow().catch((error) => this.warn(error));
    this.timer = setInterval(() => {
      this.syncNow().catch((error) => this.warn(error));
    }, this.everyMs);
    this.timer.unref();
  }

  /** Stops the timer after one last exchange, so what this replica counted is not lost. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.syncNow().catch(() => undefined);
  }

  /**
   * One exchange of every pool's counts. Exchanges never overlap (what was sent is
   * subtracted next time, so two at once would send the same leases twice): a call made
   * during one waits for it and runs another.
   */
  async syncNow(): Promise<void> {
    while (this.running) await this.running.catch(() => undefined);
    this.running = this.exchangeAll();
    try {
      await this.running;
    } finally {
      this.running = undefined;
    }
  }

  private async exchangeAll(): Promise<void> {
    for (const pool of this.pools.list()) {
      const sent = this.sent.get(pool.name) ?? { warmLeases: 0, coldLeases: 0, warmupFailures: 0 };
      const delta = this.pools.demand.takeDemandDelta(pool.name, sent);
      let totals: Awaited<ReturnType<PoolDemandExchange["exchangePoolDemand"]>>;
      try {
        totals = await this.store.exchangePoolDemand(pool.name, delta, REFILL_WINDOW);
      } catch (error) {
        this.pools.demand.returnRefills(pool.name, delta.refillMs);
        throw error;
      }
      this.sent.set(pool.name, {
        warmLeases: sent.warmLeases + delta.warmLeases,
        coldLeases: sent.coldLeases + delta.coldLeases,
        warmupFailures: sent.warmupFailures + delta.warmupFailures,
      });
      this.pools.demand.observeDeployment(pool.name, totals, this.now());
      const leases = totals.warmLeases + totals.coldLeases;
      this.metrics.poolEffectiveMinIdle.set({ pool: pool.name }, this.pools.effectiveMinIdle(pool));
      this.metrics.poolLeaseRate.set(
        { pool: pool.name },
        this.pools.demand.demandOf(pool.name)?.leasesPerSecond ?? 0,
      );
      if (leases > 0) this.metrics.poolWarmHitRatio.set({ pool: pool.name }, totals.warmLeases / leases);
    }
    if (this.failing) this.log.info("pool counts are shared again");
    this.failing = false;
  }

  private warn(error: unknown): void {
    // Once per outage: the store being away is reported by every request already.
    if (!this.failing)
      this.log.warn({ err: error }, "could not share pool counts; warm-up uses the last known");
    this.failing = true;
  }
}
