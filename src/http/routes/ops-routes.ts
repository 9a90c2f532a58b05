/**
 * Discovery, open to anyone: the OpenAPI document and the docs page (src/discovery/).
 * Liveness, readiness and metrics are bound from the registry (src/service/service-handlers.ts).
 */
import type { Hono } from "hono";
import { ANONYMOUS_CALLER, discoveryHandlers } from "../../discovery/discovery-handlers.js";
import { honoPath, operations } from "../../operations/registry.js";
import { renderOutcome } from "../common/render-outcome.js";
import type { GatewayEnv } from "../gateway-env.js";
import type { GatewayServices } from "../gateway-services.js";
import { verifyBearer } from "../middleware/authenticate.js";
import { passedAuthentication } from "../middleware/unauthenticated-gate.js";

export function registerOpsRoutes(app: Hono<GatewayEnv>, services: GatewayServices): void {
  // Open to anyone; a credential sent to /openapi.json must be valid (401) and decides the view.
  for (const [id, handler] of Object.entries(discoveryHandlers)) {
    const operation = operations.get(id)!;
    app.get(honoPath(operation.path), async (c) => {
      c.set("operation", operation.label);
      const authorization = c.req.header("authorization");
      let caller = ANONYMOUS_CALLER;
      if (id === "service.openapi" && authorization !== undefined) {
        caller = await verifyBearer(services, authorization, c.env?.incoming?.socket?.remoteAddress);
        passedAuthentication(c);
      }
      const args = { params: c.req.param() as Record<string, string>, query: c.req.query() };
      const outcome = await handler({
        operation,
        caller,
        args,
        requestId: c.get("requestId"),
        log: c.get("log"),
      });
      return renderOutcome(c, outcome);
    });
  }
}
