/**
 * The node API, on the node's own listener (default port 8091). Health, readiness and
 * metrics answer anyone (Prometheus scrapes them); everything under /node/v1 needs an edge's
 * signature (src/nodes/node-signature.ts) and every answer to it carries the node's.
 *
 *   POST /node/v1/leases                       {pool} -> 201 {record, warm}: a sandbox for a session
 *   ANY  /node/v1/sandboxes/{id}/relay/<path>  forwarded to that sandbox's server, streaming both ways
 *   GET  /node/v1/sandboxes/{id}/usage         200 {usage} (its cgroup), 204 when unknown
 *   POST /node/v1/sandboxes/{id}/destroy       204: destroyed (idempotent)
 *
 * Plain node:http rather than the gateway's Hono app: this listener parses no contract, and
 * a relay is a pipe from one socket to another. A sandbox failure answers its SandpoolError
 * with `x-sandpool-node-error: <code>`, so the edge ends the session as it would on one host.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pipeline } from "node:stream/promises";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { SandpoolError } from "../contract/error-codes.js";
import type { SandboxClient } from "../forward/sandbox-client.js";
import {
  type NodeSecrets,
  type RequestVerifier,
  SIGNATURE_HEADERS,
  STREAMED_BODY,
} from "../nodes/node-signature.js";
import type { MetricsToken } from "../service/metrics-token.js";
import type { NodeSandboxes } from "./node-sandboxes.js";

export const NODE_ERROR_HEADER = "x-sandpool-node-error";
/** The edge's deadline for the sandbox's answer headers, forwarded with a relay. */
export const NODE_TIMEOUT_HEADER = "x-sandpool-timeout-ms";
const PASSED_REQUEST_HEADERS = ["content-type", "content-length", "accept"];
const PASSED_ANSWER_HEADERS = ["content-type", "content-length", "content-disposition", "retry-after"];
const RELAY = /^\/node\/v1\/sandboxes\/([0-9a-f]{1,64})\/relay(\/.*)$/;
const SANDBOX_ACTION = /^\/node\/v1\/sandboxes\/([0-9a-f]{1,64})\/(usage|destroy)$/;

export interface NodeApiDeps {
  sandboxes: NodeSandboxes;
  client: SandboxClient;
  secrets: NodeSecrets;
  verifier: RequestVerifier;
  metrics: Registry;
  /** The bearer token /metrics requires (`metrics.token`); unset, /metrics answers anyone. */
  metricsToken?: MetricsToken;
  log: Logger;
  ready: () => boolean;
  /** Most bytes of a buffered (non-streamed) request body. */
  maxBodyBytes: number;
  /** Signature refusals, counted by reason. */
  refused?: (reason: string) => void;
}

export interface RunningNodeApi {
  url: string;
  close(): Promise<void>;
}

export async function listenNodeApi(deps: NodeApiDeps, host: string, port: number): Promise<RunningNodeApi> {
  const server: Server = createServer((req, res) => {
    handle(deps, req, res).catch((error) => {
      deps.log.error({ err: error }, "node API request failed");
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
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
  const streamed = req.headers[SIGNATURE_HEADERS.body] === STREAMED_BODY;
  const body = streamed ? undefined : await readBody(req, deps.maxBodyBytes);
  if (body === null) {
    res.writeHead(413).end();
    return;
  }
  const verdict = deps.verifier.verify(
    { method: req.method ?? "GET", target, body: streamed ? STREAMED_BODY : body },
    (name) => header(req, name),
  );
  if (!verdict.ok) {
    deps.refused?.(verdict.refused);
    deps.log.warn({ refused: verdict.refused, path }, "a node API request was refused");
    req.resume();
    res.writeHead(401, { "content-type": "application/json" }).end('{"refused":true}');
    return;
  }
  const answer = (status: number, headers: Record<string, string> = {}) => {
    res.writeHead(status, {
      ...headers,
      [SIGNATURE_HEADERS.answer]: deps.secrets.signAnswer(verdict.nonce, status),
    });
  };
  try {
    if (req.method === "POST" && path === "/node/v1/leases") {
      const { pool } = JSON.parse(body!.toString("utf8")) as { pool?: string };
      const leased = await deps.sandboxes.lease(String(pool));
      answer(201, { "content-type": "application/json" });
      res.end(JSON.stringify(leased));
      return;
    }
    const action = SANDBOX_ACTION.exec(path);
    if (action && req.method === "POST" && action[2] === "destroy") {
      await deps.sandboxes.destroy(action[1]!);
      answer(204);
      res.end();
      return;
    }
    if (action && req.method === "GET" && action[2] === "usage") {
      const usage = await deps.sandboxes.usage(action[1]!);
      if (!usage) {
        answer(204);
        res.end();
        return;
      }
      answer(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ usage }));
      return;
    }
    const relay = RELAY.exec(path);
    if (relay) {
      await relayToSandbox(deps, req, res, relay[1]!, relay[2]!, target, streamed ? req : body!, answer);
      return;
    }
    answer(404, { "content-type": "application/json" });
    res.end('{"detail":{"code":"request.not_found","message":"no such node route"}}');
  } catch (error) {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const failure =
      error instanceof SandpoolError ? error : new SandpoolError("server.internal", "the node failed");
    if (!(error instanceof SandpoolError)) deps.log.error({ err: error, path }, "node API call failed");
    answer(failure.status, {
      "content-type": "application/json",
      [NODE_ERROR_HEADER]: failure.code,
      ...(failure.retryAfterSeconds ? { "retry-after": String(failure.retryAfterSeconds) } : {}),
    });
    res.end(JSON.stringify(failure.toBody()));
  }
}

async function relayToSandbox(
  deps: NodeApiDeps,
  req: IncomingMessage,
  res: ServerResponse,
  sandboxId: string,
  subPath: string,
  target: string,
  body: IncomingMessage | Buffer,
  answer: (status: number, headers?: Record<string, string>) => void,
): Promise<void> {
  const record = deps.sandboxes.held(sandboxId);
  if (!record) {
    // Not (or no longer) held here: the same answer the sandbox gives for an unknown session.
    answer(404, { "content-type": "application/json" });
    res.end('{"detail":{"code":"session.not_found","message":"no such session"}}');
    return;
  }
  const query = target.includes("?") ? target.slice(target.indexOf("?")) : "";
  const headers: Record<string, string> = {};
  for (const name of PASSED_REQUEST_HEADERS) {
    const value = req.headers[name];
    if (typeof value === "string") headers[name] = value;
  }
  const timeoutMs = Number(req.headers[NODE_TIMEOUT_HEADER]) || 30_000;
  const method = (req.method ?? "GET") as "GET";
  const hasBody = !(Buffer.isBuffer(body) && body.length === 0 && method === "GET");
  const response = await deps.client.send(record.endpoint, {
    method,
    path: `${subPath}${query}`,
    headers,
    body: hasBody ? body : null,
    timeoutMs,
  });
  const passed: Record<string, string> = {};
  for (const name of PASSED_ANSWER_HEADERS) {
    const value = response.headers[name];
    if (typeof value === "string") passed[name] = value;
  }
  answer(response.statusCode, passed);
  res.flushHeaders();
  await pipeline(response.body, res).catch(() => res.destroy());
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === "string" ? value : undefined;
}

/** The whole body, or null past `max` bytes. */
async function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
