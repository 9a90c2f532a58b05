/**
 * Start-up step "usage": billing usage goes with the store's own writes to its backlog,
 * drained to Postgres by every replica; refusals are buffered here
 * (src/metering/durable-usage-sink.ts).
 */
import type { Logger } from "pino";
import type { GatewayConfig } from "../config/gateway-config.js";
import { BufferedUsageSink } from "../metering/buffered-usage-sink.js";
import { DurableUsageSink } from "../metering/durable-usage-sink.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import { registerUsageBacklogMetrics } from "../metering/usage-backlog-metrics.js";
import { startUsageDrain } from "../metering/usage-drain-loop.js";
import { UsageDrainer } from "../metering/usage-drainer.js";
import { UsageRepository } from "../store/sql/usage-repository.js";
import type { GatewayBackends } from "./gateway-backends.js";

export interface StartedUsage {
  usageRepository: UsageRepository;
  usage: DurableUsageSink;
  /** Stops draining the backlog (shutdown). */
  stopDrain(): void;
  /** Readiness: the backlog is within its bound (`usageBacklog.notReadyAbove`). */
  backlogWithinBound(): boolean;
}

export function startUsage(
  config: GatewayConfig,
  backends: Pick<GatewayBackends, "store" | "db" | "usageJournal">,
  deps: { metrics: GatewayMetrics; log: Logger },
): StartedUsage {
  const { store } = backends;
  const { log } = deps;
  const usageRepository = new UsageRepository(backends.db);
  const usageDrainer = new UsageDrainer(store, usageRepository, log);
  const journal = backends.usageJournal;
  const usage = new DurableUsageSink(
    store,
    usageDrainer,
    new BufferedUsageSink(usageRepository, log),
    log,
    Date.now,
    journal,
  );
  journal?.start();
  registerUsageBacklogMetrics(deps.metrics.registry, () => usageDrainer.lastReport);
  const usageDrain = startUsageDrain(usageDrainer, config.usageBacklog.drainMs, log);
  return {
    usageRepository,
    usage,
    stopDrain: () => usageDrain.stop(),
    backlogWithinBound: () => usageDrainer.lastReport.records <= config.usageBacklog.notReadyAbove,
  };
}
