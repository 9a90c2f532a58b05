/**
 * The usage backlog's size and age (src/store/coordination/usage-backlog.ts) as Prometheus
 * gauges, read from the drainer's last round when scraped: records that answered calls
 * produced and Postgres does not hold yet. Registered beside the gateway's own metrics
 * (gateway-metrics.ts), on its registry.
 */
import { Gauge, type Registry } from "prom-client";
import type { UsageBacklogReport } from "./usage-drainer.js";

export function registerUsageBacklogMetrics(registry: Registry, report: () => UsageBacklogReport): void {
  new Gauge({
    name: "sandpool_usage_backlog_records",
    help: "Usage records waiting in the coordination store to be written to Postgres (every replica's, as of the last drain)",
    registers: [registry],
    collect() {
      this.set(report().records);
    },
  });
  new Gauge({
    name: "sandpool_usage_backlog_age_seconds",
    help: "How long the oldest usage record waiting to be written to Postgres has waited (0: none waits)",
    registers: [registry],
    collect() {
      this.set(report().oldestAgeMs / 1000);
    },
  });
}
