/**
 * Pipeline step 10 (meter) for every request, denied ones included: a request id (accepted from
 * `X-Request-Id` when it is sane, else generated) on the response and on every line of the
 * request's logger (`c.get("log")`, a child of the gateway's), the gateway's version (`X-Sandpool-Version`) on the response,
 * the request counter and latency histogram, and a count of each refusal by error code
 * (mapped onto the known codes: a sandbox's own are counted as `sandbox.other`).
 * Tokens and program output never reach the log.
 */
import { randomUUID } from "node:crypto";
import { METHODS, type ServerResponse, STATUS_CODES } from "node:http";
import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import { errorCodeLabel } from "../../contract/error-codes.js";
import { answersWritten } from "../../deferred/answers-written.js";
import { lazyChild } from "../../logging/lazy-child.js";
import type { GatewayMetrics } from "../../metering/gateway-metrics.js";
import { operations } from "../../operations/registry.js";
import { SANDPOOL_VERSION, VERSION_HEADER } from "../../version.js";
import { requestHeader } from "../common/request-header.js";
import type { GatewayEnv } from "../gateway-env.js";

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const REFUSAL_STATUSES = new Set([401, 403, 413, 415, 429, 503]);

/**
 * Label values come from a fixed set: a sandbox's answer passes its status through, and a
 * client picks its method, so neither may mint new time series.
 */
function statusLabel(status: number): string {
  return STATUS_CODES[status] !== undefined ? String(status) : "other";
}

function methodLabel(method: string): string {
  return METHODS.includes(method) ? method : "other";
}

/**
 * The labelled children of the request metrics, looked up once per label set: a lookup by
 * label object hashes the labels on every call. The label sets are few (fixed values only).
 */
function labelledMetrics(metrics: GatewayMetrics) {
  const counters = new Map<string, { inc(): void }>();
  const durations = new Map<string, { observe(value: number): void }>();
  return {
    count(route: string, method: string, status: string): void {
      const id = `${route} ${method} ${status}`;
      let counter = counters.get(id);
      if (!counter) {
        counter = metrics.requests.labels(route, method, status);
        counters.set(id, counter);
      }
      counter.inc();
    },
    observe(route: string, seconds: number): void {
      let duration = durations.get(route);
      if (!duration) {
        duration = metrics.requestDuration.labels(route);
        durations.set(route, duration);
      }
      duration.observe(seconds);
    },
  };
}

export function observeRequest(log: Logger, metrics: GatewayMetrics): MiddlewareHandler<GatewayEnv> {
  const labelled = labelledMetrics(metrics);
  return async (c, next) => {
    const started = process.hrtime.bigint();
    const offered = requestHeader(c, "x-request-id");
    const requestId = offered && SANE_REQUEST_ID.test(offered) ? offered : randomUUID();
    c.set("requestId", requestId);
    // A child logger, not an AsyncLocalStorage the logger reads: on Node 20 a store in use
    // runs a hook on every promise the process makes, ~13% of the gateway's CPU per Execute.
    // Made on first use: most requests log nothing.
    c.set("log", lazyChild(log, { requestId }));
    c.set("operation", "unmatched");
    // On Node's response itself, which writes them with whatever answer goes out however it
    // was built, and keeps Hono from making a WHATWG Headers object for every answer; on
    // Hono's context (before the response exists) for a request not served by Node.
    const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    if (outgoing) {
      outgoing.setHeader("X-Request-Id", requestId);
      outgoing.setHeader(VERSION_HEADER, SANDPOOL_VERSION);
    } else {
      c.header("X-Request-Id", requestId);
      c.header(VERSION_HEADER, SANDPOOL_VERSION);
    }
    await next();
    const operation = c.get("operation");
    const contract = operations.get(c.get("operationId") ?? "")?.group === "contract";
    const status = c.res.status;
    const method = c.req.method;
    // Counted once the answer is written (a stream's, begun): off the time its client waits.
    void answersWritten().then(() => {
      labelled.count(operation, methodLabel(method), statusLabel(status));
      // The overview's error rate is the clients' (contract calls), not the console's polling.
      if (contract) metrics.answerMinutes.count(status);
      labelled.observe(operation, Number(process.hrtime.bigint() - started) / 1e9);
    });
    if (REFUSAL_STATUSES.has(status) && c.res.headers.get("content-type")?.includes("application/json")) {
      const code = await c.res
        .clone()
        .json()
        .then((body) => (body as { detail?: { code?: unknown } } | null)?.detail?.code)
        .catch(() => undefined);
      // Sandbox refusals pass through with the sandbox's body: its code is not trusted as a label.
      if (code !== undefined) metrics.rejections.inc({ code: errorCodeLabel(code) });
    }
    if (status >= 500) c.get("log").warn({ operation, status }, "request failed");
  };
}
