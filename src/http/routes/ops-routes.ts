/** Unauthenticated operational endpoints: liveness, readiness and Prometheus metrics. */
import type { Hono } from "hono";
import type { GatewayEnv } from "../gateway-env.js";
import type { GatewayServices } from "../gateway-services.js";

export function registerOpsRoutes(app: Hono<GatewayEnv>, services: GatewayServices): void {
  app.get("/healthz", (c) => {
    c.set("operation", "healthz");
    return c.json({ status: "ok" });
  });

  app.get("/readyz", async (c) => {
    c.set("operation", "readyz");
    const ready = await services.ready().catch(() => false);
    return c.json({ status: ready ? "ready" : "not_ready" }, ready ? 200 : 503);
  });

  app.get("/metrics", async (c) => {
    c.set("operation", "metrics");
    await services.pools.refreshGauges().catch(() => undefined);
    const body = await services.metrics.registry.metrics();
    return c.body(body, 200, { "content-type": services.metrics.registry.contentType });
  });
}
