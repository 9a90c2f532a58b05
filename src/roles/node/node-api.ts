/**
 * The node API, on the node's own listener (default port 8091). Health, readiness and
 * metrics answer anyone (Prometheus scrapes them); everything under /node/v1 needs an edge's
 * signature (src/roles/shared/node-signature.ts) and every answer to it is signed, body included.
 *
 *   POST /node/v1/leases                       {pool, reuse?} -> 201 {record, warm, reused}: a sandbox
 *                                              for a session, the workspace's own parked one first
 *   ANY  /node/v1/sandboxes/{id}/relay/<path>  forwarded to that sandbox's server, streaming both ways
 *   GET  /node/v1/sandboxes/{id}/usage         200 {usage} (its cgroup), 204 when unknown
 *   POST /node/v1/sandboxes/{id}/destroy       204: destroyed (idempotent)
 *   POST /node/v1/sandboxes/{id}/recycle       200 {parked}: scrubbed and parked for the workspace's
 *                                              next lease here, or (false) destroyed (node-parking.ts)
 *   and hibernation's checkpoints and restores (node-hibernation-routes.ts)
 *
 * Nothing unauthenticated is read: a request's signature is checked from its headers, before
 * any byte of its body, and a request that fails it gets its 401 at once on a closed
 * connection, its body never read. The listener bounds what is left to a client that signs
 * nothing: the time its headers may take (`headersTimeoutMs`), its whole request
 * (`requestTimeoutMs`) and the connections open at once (`maxConnections`); a signed
 * buffered body must arrive within `bodyTimeoutMs`.
 *
 * Every call carries its workspace (signed). A lease binds its sandbox to it, and a call on
 * a sandbox for any other workspace is refused: a relay gets the unknown session's 404 (the
 * edge ends that session), usage and destroy a SandpoolError. The workspace's limits come
 * with each call the same way (x-sandpool-max-file-bytes on an upload) and are held here and
 * passed to the sandbox, which holds them exactly.
 *
 * Routes are a table (NODE_ROUTES): a sandbox action is one `sandboxAction(...)` line.
 * Plain node:http rather than the gateway's Hono app: this listener parses no contract, and
 * a relay is a pipe from one socket to another. A sandbox failure answers its SandpoolError
 * with `x-sandpool-node-error: <code>`, so the edge ends the session as it would on one host.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Readable } from "node:stream";
import { SandpoolError } from "../../contract/error-codes.js";
import { SANDBOX_ID_PATTERN } from "../shared/node-api-wire.js";
import {
  FRAMED_BODY,
  NODE_ERROR_HEADER,
  NODE_TIMEOUT_HEADER,
  SIGNATURE_HEADERS,
} from "../shared/node-signature.js";
import type { NodeApiDeps } from "./node-call.js";
import { NODE_HIBERNATION_ROUTES } from "./node-hibernation-routes.js";
import { relayToSandbox, uploadOf } from "./node-relay.js";
import { readSignedBody } from "./node-request-body.js";
import { type NodeRoute, sandboxAction } from "./node-route.js";
import { SignedAnswer } from "./signed-answer.js";

export type { NodeApiDeps, NodeApiLimits, NodeCall } from "./node-call.js";

export { NODE_ERROR_HEADER, NODE_TIMEOUT_HEADER };

export interface RunningNodeApi {
  url: string;
  server: Server;
  close(): Promise<void>;
}

export const NODE_ROUTES: readonly NodeRoute[] = [
  {
    method: "POST",
    path: /^\/node\/v1\/leases$/,
    handle: async ({ deps, body, workspace, answer }) => {
      if (workspace === undefined)
        throw new SandpoolError("request.malformed", "a lease names its workspace");
      const pool = jsonField(body as Buffer, "pool");
      if (typeof pool !== "string") throw new SandpoolError("request.malformed", "a lease names its pool");
      // Only an explicit false turns the workspace's parked sandboxes off (its policy's sandboxReuse).
      const reuse = jsonField(body as Buffer, "reuse") !== false;
      answer.send(201, {}, await deps.sandboxes.lease(pool, workspace, { reuse }));
    },
  },
  sandboxAction("POST", "recycle", async ({ deps, workspace, answer }, record) => {
    answer.send(200, {}, { parked: await deps.sandboxes.recycle(record, workspace!) });
  }),
  sandboxAction(
    "POST",
    "destroy",
    async ({ deps, answer }, record) => {
      await deps.sandboxes.destroy(record.sandboxId);
      answer.send(204);
    },
    // Gone already: destroying is idempotent.
    ({ answer }) => answer.send(204),
  ),
  sandboxAction(
    "GET",
    "usage",
    async ({ deps, answer }, record) => {
      const usage = await deps.sandboxes.usage(record);
      if (usage) answer.send(200, {}, { usage });
      else answer.send(204);
    },
    ({ answer }) => answer.send(204),
  ),
  ...NODE_HIBERNATION_ROUTES,
  {
    method: undefined,
    path: new RegExp(`^/node/v1/sandboxes/${SANDBOX_ID_PATTERN}/relay(/.*)$`),
    streams: true,
    handle: relayToSandbox,
  },
];

export async function listenNodeApi(deps: NodeApiDeps, host: string, port: number): Promise<RunningNodeApi> {
  const { limits } = deps;
  const server: Server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // How often those two are checked: often enough that a stalled client goes near its time.
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4))),
      keepAliveTimeout: 65_000,
    },
    (req, res) => {
      handle(deps, req, res).catch((error) => {
        deps.log.error({ err: error }, "node API request failed");
        if (!res.headersSent) {
          closeBehind(req, res);
          res.writeHead(500).end();
        } else res.destroy();
      });
    },
  );
  server.maxConnections = limits.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(deps: NodeApiDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const target = req.url ?? "/";
  const path = target.split("?")[0]!;
  if (req.method === "GET" && (path === "/healthz" || path === "/readyz")) {
    const ok = path === "/healthz" || deps.ready();
    res.writeHead(ok ? 200 : 503, { "content-type": "application/json" }).end(JSON.stringify({ ok }));
    return;
  }
  if (req.method === "GET" && path === "/metrics") {
    if (deps.metricsToken && !deps.metricsToken.accepts(header(req, "authorization"))) {
      res.writeHead(401, { "www-authenticate": 'Bearer realm="sandpool"' }).end();
      return;
    }
    res.writeHead(200, { "content-type": deps.metrics.contentType }).end(await deps.metrics.metrics());
    return;
  }
  // The head alone decides: no byte of the body is read for a request that is not signed.
  const verdict = deps.verifier.verify({ method: req.method ?? "GET", target }, (name) => header(req, name));
  if (!verdict.ok) return refuse(deps, req, res, verdict.refused, path);
  const answer = new SignedAnswer(res, deps.secrets, verdict.nonce);
  try {
    const { route, params } = routeOf(req.method ?? "GET", path);
    if (!route) {
      req.resume();
      answer.send(404, {}, { detail: { code: "request.not_found", message: "no such node route" } });
      return;
    }
    let body: Buffer | Readable;
    if (verdict.body === FRAMED_BODY) {
      if (!route.streams) throw new SandpoolError("request.malformed", "this route takes no streamed body");
      body = uploadOf(req, verdict.frames);
    } else {
      const read = await readSignedBody(req, verdict.body, {
        maxBytes: deps.limits.maxBodyBytes,
        timeoutMs: deps.limits.bodyTimeoutMs,
      });
      if (!read.ok && "refused" in read) return refuse(deps, req, res, read.refused, path);
      if (!read.ok) throw read.failure;
      body = read.bytes;
    }
    await route.handle({ deps, req, answer, params, target, workspace: workspaceOf(req), body });
  } catch (error) {
    if (answer.sent) {
      res.destroy();
      return;
    }
    const failure =
      error instanceof SandpoolError ? error : new SandpoolError("server.internal", "the node failed");
    if (!(error instanceof SandpoolError)) deps.log.error({ err: error, path }, "node API call failed");
    // A body refused before its end: the rest of it is not read, the connection goes.
    if (!req.readableEnded) closeBehind(req, res);
    answer.error(failure);
  }
}

function routeOf(method: string, path: string): { route?: NodeRoute; params: string[] } {
  for (const route of NODE_ROUTES) {
    if (route.method !== undefined && route.method !== method) continue;
    const match = route.path.exec(path);
    if (match) return { route, params: match.slice(1) };
  }
  return { params: [] };
}

/**
 * Refuses a request that is not (or no longer) the edge's: 401 at once, before any of its
 * body is read, and the connection closed behind it.
 */
function refuse(
  deps: NodeApiDeps,
  req: IncomingMessage,
  res: ServerResponse,
  reason: string,
  path: string,
): void {
  deps.refused?.(reason);
  deps.log.warn({ refused: reason, path }, "a node API request was refused");
  closeBehind(req, res);
  res.writeHead(401, { "content-type": "application/json" }).end('{"refused":true}');
}

/** How long a refused request's sender has to take its answer before the connection is cut. */
const LINGER_MS = 2_000;

/**
 * Closes the connection once the answer (not yet written) is out, without losing it: the
 * answer says `Connection: close`, the node sends its FIN and drops what still arrives until
 * the sender closes too, or for LINGER_MS at most. node:http would close at once (its
 * destroySoon on a `close` answer), and closing while the sender's bytes are unread resets
 * the connection, which can take the answer with it. Nothing that arrives is kept.
 */
function closeBehind(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket;
  res.setHeader("connection", "close");
  // Runs after node:http's own finish handler, which ended the socket and set it to be
  // destroyed as soon as its FIN is out: that destroy waits for the sender instead.
  res.once("finish", () => {
    socket.removeListener("finish", socket.destroy);
    if (socket.writable) socket.end();
    req.resume();
    const cut = setTimeout(() => socket.destroy(), LINGER_MS);
    cut.unref();
    socket.once("close", () => clearTimeout(cut));
  });
}

/** A field of a JSON object body; a body that is not one is the edge's mistake. */
function jsonField(body: Buffer, name: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    throw new SandpoolError("request.bad_json", "the body is not JSON");
  }
  return typeof parsed === "object" && parsed !== null
    ? (parsed as Record<string, unknown>)[name]
    : undefined;
}

function workspaceOf(req: IncomingMessage): string | undefined {
  const value = header(req, SIGNATURE_HEADERS.workspace);
  if (!value) return undefined;
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === "string" ? value : undefined;
}
