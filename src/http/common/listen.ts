/**
 * Starts a Node HTTP server for a Hono app with the transport rules of pipeline step 0:
 * the raw request target is checked first, and slow clients are cut off by header and
 * request timeouts instead of holding a socket forever.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { guardRequestTarget } from "./request-target.js";

export interface ListenOptions {
  host: string;
  port: number;
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
}

export interface RunningServer {
  server: Server;
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Anything with a fetch handler: any Hono app, whatever its environment type. */
export interface FetchApp {
  fetch: Parameters<typeof getRequestListener>[0];
}

export async function listen(app: FetchApp, options: ListenOptions): Promise<RunningServer> {
  const server = createServer(guardRequestTarget(getRequestListener(app.fetch)));
  server.headersTimeout = options.headersTimeoutMs ?? 10_000;
  // Whole-request limit: must outlast the longest call a client may make (exec timeouts).
  server.requestTimeout = options.requestTimeoutMs ?? 0;
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    server,
    port,
    url: `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
