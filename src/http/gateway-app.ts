/**
 * The gateway's Hono app. Contract routes are served at `/` and, when configured, under a
 * base path (a platform mounts the contract under its own URL). Every contract route, and
 * every unknown path next to them, is authenticated first: 401 comes before any 404.
 * The admin API lives at `/admin/v1`, never under the base path, and needs an admin token;
 * with a listener of its own (`adminListener`), the public app answers its paths as unknown
 * routes, and the admin listener's app serves the admin API and nothing else (no health, no
 * metrics, no contract). Health stays open; metrics too unless `metrics.token` is set.
 *
 * Before any of that, every request passes the transport checks: its target (400), its
 * Host and Origin (403), and the bound on requests not yet authenticated (503; health
 * exempt, metrics counted until its token is accepted). An authenticated contract call then counts against its workspace's
 * calls in flight (429). The routes are generated from the operation registry: each
 * operation is bound to the pipeline (src/pipeline/) with its handler (bind-operations.ts);
 * a contract call refused after authentication (policy, quota, capacity, unknown session)
 * is audited by the pipeline, or by the calls in flight when they refuse it.
 */

import { Hono } from "hono";
import type { Logger } from "pino";
import { auditRefusal, sessionIdInPath } from "../audit/audit-refusal.js";
import { type BearerCheck, verifyBearer } from "../auth/verify-bearer.js";
import type { ConsoleAssets } from "../console/console-assets.js";
import { SandpoolError } from "../contract/error-codes.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { UsageSink } from "../metering/usage-sink.js";
import type { OperationHandlers } from "../operations/handler.js";
import type { PipelineDeps } from "../pipeline/pipeline.js";
import type { MetricsToken } from "../service-operations/metrics-token.js";
import { bindOperations } from "./bind-operations.js";
import { errorResponse } from "./common/error-response.js";
import { requestHeader } from "./common/request-header.js";
import type { GatewayEnv } from "./gateway-env.js";
import { authenticate } from "./middleware/bearer-authentication.js";
import { CallsInFlight } from "./middleware/calls-in-flight.js";
import type { HostTrust } from "./middleware/host-and-origin.js";
import { observeRequest } from "./middleware/observe-request.js";
import { requireMetricsToken } from "./middleware/require-metrics-token.js";
import { transportChecks } from "./middleware/transport-checks.js";
import { UnauthenticatedGate } from "./middleware/unauthenticated-gate.js";
import { nameContractOperations } from "./name-contract-operations.js";
import { ADMIN_BASE_PATH, createAdminApp } from "./routes/admin-routes.js";
import { mountConsole } from "./routes/console-routes.js";
import { unmatchedRoute } from "./routes/unmatched-route.js";

/** The operations an app serves: the pipeline's dependencies and each group's handlers. */
export interface ServedOperations {
  deps: PipelineDeps;
  contract: OperationHandlers;
  service: OperationHandlers;
  /** The admin API's handlers; without them the admin API is not served. */
  admin?: OperationHandlers;
}

/** What the transport itself needs, besides the operations it binds. */
export interface GatewayAppDeps extends BearerCheck {
  log: Logger;
  metrics: GatewayMetrics;
  /** Where a refusal by a middleware (after authentication) is audited. */
  usage: UsageSink;
  limits: {
    maxJsonBodyBytes: number;
    /** Requests in flight not yet authenticated before 503 `request.busy` (default 256). */
    maxUnauthenticatedRequests?: number;
    /** Contract calls of one workspace in flight on this replica before 429 (default 32). */
    maxCallsInFlightPerWorkspace?: number;
  };
  /** The bearer token /metrics requires (`metrics.token`); unset, /metrics answers anyone. */
  metricsToken?: MetricsToken;
  operations: ServedOperations;
}

export function createGatewayApp(
  services: GatewayAppDeps,
  options: {
    basePath?: string;
    http?: Partial<HostTrust>;
    /**
     * "here" (the default): the admin API beside the contract. "elsewhere": another listener
     * serves it, so its paths are unknown routes here (401 before 404, like any other).
     * "only": the admin listener's app.
     */
    adminApi?: "here" | "elsewhere" | "only";
    /** The operator console's files (src/console), served at /console beside the admin API; unset, none. */
    console?: ConsoleAssets;
  } = {},
): Hono<GatewayEnv> {
  const adminApi = options.adminApi ?? "here";
  const onError = (error: Error, c: Parameters<typeof errorResponse>[0]) =>
    errorResponse(c, error, (c.get("log") as Logger | undefined) ?? services.log);

  const built = services.operations;
  const contract = new Hono<GatewayEnv>();
  contract.use("*", authenticate(services));
  nameContractOperations(
    contract,
    new CallsInFlight(services.limits.maxCallsInFlightPerWorkspace),
    (c, refusal) =>
      auditRefusal(
        services.usage,
        c.get("log") ?? services.log,
        {
          principal: c.get("principal"),
          operationId: c.get("operationId") ?? "unmatched",
          sessionId: sessionIdInPath(c.req.path),
        },
        refusal,
      ),
  );
  bindOperations(contract, "contract", built.contract, built.deps, {
    maxJsonBytes: services.limits.maxJsonBodyBytes,
  });
  const basePath = normalizeBasePath(options.basePath);
  contract.all("*", unmatchedRoute(basePath));

  const app = new Hono<GatewayEnv>();
  app.use("*", observeRequest(services.log, services.metrics));
  app.use(
    "*",
    transportChecks(
      {
        allowedHosts: options.http?.allowedHosts ?? [],
        allowedOrigins: options.http?.allowedOrigins ?? [],
      },
      new UnauthenticatedGate(services.limits.maxUnauthenticatedRequests ?? 256),
    ),
  );
  if (adminApi !== "only") {
    if (services.metricsToken) app.use("/metrics", requireMetricsToken(services.metricsToken));
    bindOperations(app, "service", built.service, built.deps, { methodNotAllowed: true });
  }
  if (built.admin && adminApi !== "elsewhere") {
    // Before the contract: its catch-all answers every path under /admin/v1 itself.
    const admin = createAdminApp(services, built.deps, built.admin, services.limits.maxJsonBodyBytes);
    admin.onError(onError);
    app.route(ADMIN_BASE_PATH, admin);
    // The console talks to the admin API, so it is served where that is (same origin).
    if (options.console) mountConsole(app, options.console);
  }
  if (adminApi === "only") {
    // Any valid token (an admin token names no workspace), then 404: nothing else lives here.
    app.all("*", async (c) => {
      await verifyBearer(services, requestHeader(c, "authorization"), c.env?.incoming?.socket?.remoteAddress);
      throw new SandpoolError("request.not_found", "no such route");
    });
  } else {
    if (basePath) app.route(basePath, contract);
    app.route("/", contract);
  }
  // One error handler, the app's: Hono wraps every route of a sub-app that has its own in a
  // composition of its own, per request. Refusals are audited where they are made (the
  // pipeline, calls in flight), never here.
  app.onError(onError);
  return app;
}

/** `v1/sandbox/` -> `/v1/sandbox`; empty or `/` -> undefined (served at the root only). */
export function normalizeBasePath(basePath: string | undefined): string | undefined {
  const trimmed = (basePath ?? "").replace(/^\/+|\/+$/g, "");
  return trimmed ? `/${trimmed}` : undefined;
}
