/**
 * The route table, generated from the registry: each operation of a group that has a handler
 * is bound on its method and path (`honoPath`) to the pipeline (src/pipeline/pipeline.ts)
 * with that handler. The binding is the transport's part only: it reads the call's
 * arguments off the request (path parameters, the query when the operation declares one,
 * the JSON body under its size cap, an upload's byte stream, the answer kind asked for),
 * authenticates the caller when no middleware before it did (the admin API's, whose 401
 * must come before any 404 of its own), and renders the outcome. It takes any group's
 * handler map: the contract's, the service endpoints', the admin API's.
 *
 * It binds what has a handler (a test may bind a few); a gateway is never built with one
 * missing: its composition root refuses to start (assertEveryOperationHandled, in
 * src/gateway/gateway-operations.ts), and a unit test holds every spec to a handler
 * (test/unit/operations/handler-error-codes.test.ts).
 */
import { PassThrough, Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import type { Context, Env, Hono } from "hono";
import type { Logger } from "pino";
import type { Caller } from "../auth/principal.js";
import { SandpoolError } from "../contract/error-codes.js";
import { wantsEventStream } from "../contract/exec-events.js";
import type { CallArgs, CallTransport, OperationHandler, OperationHandlers } from "../operations/handler.js";
import type { OperationGroup, OperationSpec } from "../operations/operation.js";
import { honoPath, type OperationRegistry, operations } from "../operations/registry.js";
import { type PipelineDeps, runPipeline } from "../pipeline/pipeline.js";
import { inputOf, type RawArgs } from "../pipeline/steps/args.js";
import { authenticateCaller } from "../pipeline/steps/authenticate.js";
import { closeUndelivered } from "./close-undelivered.js";
import { checkJsonSize, readJsonBody } from "./common/read-json-body.js";
import { renderOutcome } from "./common/render-outcome.js";
import { requestHeader } from "./common/request-header.js";
import type { GatewayEnv } from "./gateway-env.js";
import { passedAuthentication } from "./middleware/unauthenticated-gate.js";

export interface BindOptions {
  /** The size cap of JSON bodies (413 before anything is read), for operations that take one. */
  maxJsonBytes?: number;
  registry?: OperationRegistry;
  /**
   * Answers a wrong method on a bound path with 405 and `Allow` (the methods bound there),
   * here (the admin API); the contract answers it after its catch-all (unmatched-route.ts).
   */
  methodNotAllowed?: boolean;
}

/** What the binder reads of any app's request variables (the contract's, the admin API's). */
export interface BindableEnv extends Env {
  Variables: { requestId: string; log: Logger; operation: string; operationId?: string };
}

const NO_ARGS: Readonly<Record<string, string>> = Object.freeze({});

export function bindOperations<E extends BindableEnv>(
  app: Hono<E>,
  group: OperationGroup,
  handlers: OperationHandlers,
  deps: PipelineDeps,
  options: BindOptions = {},
): void {
  // One table for every app: the route reads the contract's variables, absent ones undefined.
  const table = app as unknown as Hono<GatewayEnv>;
  const served = (options.registry ?? operations).all(group).filter((operation) => handlers[operation.id]);
  for (const operation of served) {
    table.on(
      operation.method,
      honoPath(operation.path),
      bindOne(operation, handlers[operation.id]!, deps, options),
    );
  }
  if (!options.methodNotAllowed) return;
  for (const path of new Set(served.map((operation) => operation.path))) {
    const allow = served.filter((operation) => operation.path === path).map((operation) => operation.method);
    table.all(honoPath(path), (c) => {
      throw new SandpoolError("request.method_not_allowed", `${c.req.method} is not allowed here`, {
        headers: { Allow: allow.join(", ") },
      });
    });
  }
}

function bindOne(
  operation: OperationSpec,
  handler: OperationHandler,
  deps: PipelineDeps,
  options: BindOptions,
): (c: Context<GatewayEnv>) => Promise<Response> {
  const hasParams = operation.path.includes("{");
  const input = inputOf(operation);
  const takesJson = input === "json" || input === "optional-json";
  const maxJsonBytes = takesJson ? options.maxJsonBytes : undefined;
  const streams = operation.answers.includes("event-stream");
  return async (c) => {
    // The size cap first, in the route rather than a middleware before it (a layer costs every
    // call a step of Hono's composition); a body within it is read only by the args step.
    if (maxJsonBytes !== undefined) {
      const reading = checkJsonSize(c, maxJsonBytes);
      if (reading) await reading;
    }
    c.set("operation", operation.label);
    c.set("operationId", operation.id);
    let caller: Caller | undefined = c.get("principal") ?? c.get("caller");
    if (caller === undefined && (operation.mountedFor !== "anyone" || operation.credential === "optional")) {
      caller = await authenticateCaller(deps.check, operation, {
        authorization: requestHeader(c, "authorization"),
        address: c.env?.incoming?.socket?.remoteAddress,
      });
      // An open operation called without a credential stays within the unauthenticated bound.
      if (caller !== undefined) passedAuthentication(c);
    }
    const answer: CallArgs["answer"] =
      streams && wantsEventStream(requestHeader(c, "accept")) ? "event-stream" : undefined;
    const raw: RawArgs = {
      params: hasParams ? c.req.param() : NO_ARGS,
      query: operation.query ? c.req.query() : NO_ARGS,
      readBody: takesJson ? (optional) => readJsonBody(c, { optional }) : undefined,
      stream: input === "stream" ? uploadOf(c) : undefined,
      answer,
    };
    const outcome = await runPipeline(deps, handler, {
      operation,
      credential: { caller },
      raw,
      requestId: c.get("requestId"),
      log: c.get("log"),
      transport: answer === "event-stream" ? transportOf(c) : undefined,
    });
    return renderOutcome(c, outcome);
  };
}

/**
 * An upload's bytes, unread: the handler streams them on. The body is taken from the request
 * only when the handler reads it: a call refused before (413 on its Content-Length, 404)
 * leaves it untouched, for the server to discard.
 *
 * The handler gets a pipe from the request, not the request itself nor a web stream over it:
 * when the sandbox answers before the last byte (a body it refuses at once), the sandbox
 * client destroys the stream it was sending. Destroying the request would close the client's
 * keep-alive connection under its next call, and a web stream's reader would stay attached
 * and hold the request paused, so the server's drain of the rest stalls and closes it too.
 * Destroying a pipe only unpipes it; the rest of the body is then read and thrown away.
 */
function uploadOf(c: Context<GatewayEnv>): CallArgs["stream"] {
  const declared = Number(requestHeader(c, "content-length"));
  return {
    contentType: requestHeader(c, "content-type") ?? "application/octet-stream",
    contentLength: Number.isFinite(declared) ? declared : undefined,
    get body() {
      const incoming = c.env?.incoming;
      return incoming ? incoming.pipe(new PassThrough()) : Readable.fromWeb(webBodyOf(c));
    },
  };
}

function webBodyOf(c: Context<GatewayEnv>): WebReadableStream<Uint8Array> {
  return (c.req.raw.body ??
    new ReadableStream({ start: (controller) => controller.close() })) as WebReadableStream<Uint8Array>;
}

/** What a streamed answer may ask of the HTTP transport. */
function transportOf(c: Context<GatewayEnv>): CallTransport {
  return {
    holdCallInFlight: c.get("holdCallInFlight"),
    closeUndeliveredAfter: (ms) => closeUndelivered(c, ms),
  };
}
