/** The service endpoints, open to anyone: liveness, readiness and Prometheus metrics. */
import type { GatewayServices } from "../http/gateway-services.js";
import type { OperationHandlers } from "../operations/handler.js";

const ALIVE = { status: "ok" } as const;

export function serviceHandlers(services: GatewayServices): OperationHandlers {
  return {
    "service.healthz": async () => ({ kind: "json", status: 200, body: ALIVE }),

    "service.readyz": async () => {
      const ready = await services.ready().catch(() => false);
      return { kind: "json", status: ready ? 200 : 503, body: { status: ready ? "ready" : "not_ready" } };
    },

    "service.metrics": async () => {
      await services.pools.refreshGauges().catch(() => undefined);
      const body = await services.metrics.registry.metrics();
      return {
        kind: "raw",
        status: 200,
        headers: { "content-type": services.metrics.registry.contentType },
        body,
      };
    },
  };
}
