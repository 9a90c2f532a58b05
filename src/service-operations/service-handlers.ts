/** The service endpoints, open to anyone: liveness, readiness and Prometheus metrics. */
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { OperationHandlers } from "../operations/handler.js";
import { serviceOperations } from "../operations/service-operations.js";
import { handlersFor } from "../operations/typed-handlers.js";
import type { PoolManager } from "../pool/pool-manager.js";

const ALIVE = { status: "ok" } as const;

export interface ServiceDeps {
  /** Answers /readyz: false while the gateway cannot serve (start-up, shutdown, store down). */
  ready: () => Promise<boolean>;
  /** The pools' gauges, brought up to date before a scrape. */
  pools: Pick<PoolManager, "refreshGauges">;
  metrics: Pick<GatewayMetrics, "registry">;
}

export function serviceHandlers(deps: ServiceDeps): OperationHandlers {
  return handlersFor(serviceOperations, {
    "service.healthz": async () => ({ kind: "json", status: 200, body: ALIVE }),

    "service.readyz": async () => {
      const ready = await deps.ready().catch(() => false);
      return { kind: "json", status: ready ? 200 : 503, body: { status: ready ? "ready" : "not_ready" } };
    },

    "service.metrics": async () => {
      await deps.pools.refreshGauges().catch(() => undefined);
      const body = await deps.metrics.registry.metrics();
      return {
        kind: "raw",
        status: 200,
        headers: { "content-type": deps.metrics.registry.contentType },
        body,
      };
    },
  });
}
