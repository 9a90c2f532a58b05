/**
 * Starts a Node HTTP server for a Hono app: slow clients are cut off by header, body-read
 * and request timeouts instead of holding a socket forever, requests Node's own parser
 * rejects still get a contract-shaped 400, and closing drains: no new requests, calls in
 * flight finish, and each keep-alive connection is closed as soon as it falls idle.
 */
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { chmod, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { errorBody } from "../../contract/error-codes.js";
import { guardBodyReads } from "./body-read-timeout.js";
import { WriteStallGuard } from "./write-stall-guard.js";

export interface ListenOptions {
  host: string;
  port: number;
  /**
   * Listen on this Unix socket instead of host and port. The socket is made connectable by
   * any user (0666): who may reach it is decided by the directory it sits in; unless
   * `bindSocket` makes it.
   */
  socketPath?: string;
  /**
   * Makes the socket (its removal and bind, both synchronous) under an identity and umask of
   * its own, and leaves its mode alone: the sandbox server binds as its directory's owner
   * (src/sandbox/user-code/socket-owner.ts).
   */
  bindSocket?: <T>(bind: () => T) => T;
  /** The whole header block must arrive within this (default 10 s). */
  headersTimeoutMs?: number;
  /** A request body silent this long while it is being read cuts the client off; unset: no limit. */
  bodyReadTimeoutMs?: number;
  /** A response whose writes stay backed up this long (the client stopped reading) is cut off. */
  writeStallTimeoutMs?: number;
  requestTimeoutMs?: number;
}

export interface RunningServer {
  server: Server;
  /** `http://host:port`, or `unix:/path` for a server on a Unix socket. */
  url: string;
  /** 0 for a server on a Unix socket. */
  port: number;
  /** Stops accepting and resolves once every request in flight has been answered. */
  close(): Promise<void>;
}

/** Anything with a fetch handler: any Hono app, whatever its environment type. */
export interface FetchApp {
  fetch: Parameters<typeof getRequestListener>[0];
}

const BAD_REQUEST = Buffer.from(JSON.stringify(errorBody("request.bad_target", "malformed request")));
const BAD_TARGET = Buffer.from(JSON.stringify(errorBody("request.bad_target", "malformed request target")));

export async function listen(app: FetchApp, options: ListenOptions): Promise<RunningServer> {
  let draining = false;
  const handle = getRequestListener(app.fetch);
  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  // Node checks header and request timeouts on this period (30 s by default): a tighter one
  // makes a short headers timeout hold within a quarter of itself.
  const connectionsCheckingInterval = Math.min(30_000, Math.max(100, Math.floor(headersTimeout / 4)));
  const writeStalls =
    options.writeStallTimeoutMs !== undefined ? new WriteStallGuard(options.writeStallTimeoutMs) : undefined;
  const server = createServer({ connectionsCheckingInterval }, (req, res) => {
    // While draining, every answer closes its connection, so keep-alive clients move on.
    if (draining) res.shouldKeepAlive = false;
    // Absolute-form and asterisk targets, and backslashes, cannot even become a Request:
    // refused here; every other bad target is refused by the guard middleware.
    if (!req.url?.startsWith("/") || req.url.includes("\\")) {
      res.writeHead(400, {
        "content-type": "application/json",
        "content-length": BAD_TARGET.length,
        "x-request-id": randomUUID(),
      });
      res.end(BAD_TARGET);
      return;
    }
    if (options.bodyReadTimeoutMs !== undefined) guardBodyReads(req, res, options.bodyReadTimeoutMs);
    writeStalls?.watch(res);
    void handle(req, res);
  });
  server.headersTimeout = headersTimeout;
  // Whole-request limit: must outlast the longest call a client may make (exec timeouts).
  server.requestTimeout = options.requestTimeoutMs ?? 0;
  server.keepAliveTimeout = 65_000;
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable || error.code === "ECONNRESET") {
      socket.destroy();
      return;
    }
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${BAD_REQUEST.length}\r\nConnection: close\r\n\r\n${BAD_REQUEST}`,
    );
  });
  const { socketPath, bindSocket } = options;
  // A socket file left by a server that died would make listen fail with EADDRINUSE.
  if (socketPath && !bindSocket) await rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    const ready = () => {
      server.off("error", reject);
      resolve();
    };
    if (socketPath && bindSocket)
      bindSocket(() => {
        rmSync(socketPath, { force: true });
        server.listen(socketPath, ready);
      });
    else if (socketPath) listenOnSocket(server, socketPath, ready);
    else server.listen(options.port, options.host, ready);
  });
  if (socketPath && !bindSocket) await makeConnectable(socketPath);
  const port = socketPath ? 0 : (server.address() as AddressInfo).port;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    server,
    port,
    url: socketPath ? `unix:${socketPath}` : `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        draining = true;
        const sweep = setInterval(() => server.closeIdleConnections(), 100);
        server.close(() => {
          clearInterval(sweep);
          writeStalls?.close();
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

/**
 * The socket is created 0666 by the umask it is bound under, not only by a chmod after: under
 * gVisor a socket in a host directory is the host's file, which the sandbox may create but not
 * chmod or stat (runsc --host-uds=create), and the gateway connects as another user.
 */
function listenOnSocket(server: Server, socketPath: string, ready: () => void): void {
  const umask = process.umask(0o111);
  try {
    server.listen(socketPath, ready);
  } finally {
    process.umask(umask);
  }
}

async function makeConnectable(socketPath: string): Promise<void> {
  try {
    await chmod(socketPath, 0o666);
  } catch (error) {
    // gVisor refuses a chmod of a host-backed socket; its umask made it 0666 already.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") throw error;
  }
}
