/**
 * Start-up step "listen": the public listener, and the admin API's own when `adminListener`
 * is configured (else the admin API is served on the public one), each with the operator
 * console beside the admin API. The operations are built once and served by both apps.
 */
import type { GatewayConfig } from "../config/gateway-config.js";
import { type ConsoleAssets, consoleAssetsIn } from "../console/console-assets.js";
import { listen, type RunningServer } from "../http/common/listen.js";
import { createGatewayApp } from "../http/gateway-app.js";
import { gatewayOperations } from "./gateway-operations.js";
import type { GatewayParts } from "./gateway-parts.js";

export interface GatewayListeners {
  server: RunningServer;
  admin?: RunningServer;
}

export async function listenGateway(
  config: GatewayConfig,
  services: GatewayParts,
  /** The console's files: the build's beside this module unless given (a gateway run from src/ in a test). */
  consoleAssets: ConsoleAssets = consoleAssetsIn(),
): Promise<GatewayListeners> {
  const separateAdmin = config.adminListener !== undefined;
  const app = { ...services, operations: gatewayOperations(services) };
  // The operator console: static files beside the admin API (docs/console.md).
  const consoleFiles = config.console.enabled ? consoleAssets : undefined;
  const publicApp = createGatewayApp(app, {
    basePath: config.basePath,
    http: config.http,
    adminApi: separateAdmin ? "elsewhere" : "here",
    console: consoleFiles,
  });
  const server = await listen(publicApp, {
    host: config.host,
    port: config.port,
    headersTimeoutMs: config.limits.headerReadTimeoutMs,
    bodyReadTimeoutMs: config.limits.bodyReadTimeoutMs,
    writeStallTimeoutMs: config.limits.writeStallTimeoutMs,
    requestTimeoutMs:
      (config.policy.execTimeoutCeilingSeconds + 60) * 1000 + config.limits.execDeadlineBufferMs,
  });
  if (!config.adminListener) return { server };
  try {
    const adminApp = createGatewayApp(app, { http: config.http, adminApi: "only", console: consoleFiles });
    const admin = await listen(adminApp, {
      host: config.adminListener.host,
      port: config.adminListener.port,
      headersTimeoutMs: config.limits.headerReadTimeoutMs,
      bodyReadTimeoutMs: config.limits.bodyReadTimeoutMs,
      writeStallTimeoutMs: config.limits.writeStallTimeoutMs,
    });
    return { server, admin };
  } catch (error) {
    await server.close();
    throw error;
  }
}
