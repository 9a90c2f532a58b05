/**
 * Sends one request to the sandbox serving a session and turns what can go wrong into the
 * session's end: a sandbox that is unreachable or times out ends the session (its state
 * is in doubt), and so does a sandbox that no longer knows the inner session. The client
 * then gets 502/504, or the same 404 as for any unknown session; a failure of a session
 * someone else ended meanwhile (the end closes the sandbox's session first) is that 404 too.
 *
 * Successful answers stream back untouched (bodies and unknown fields pass through), with
 * backpressure: a slow client slows the sandbox, the gateway holds no more than its buffers.
 * Every answer read into memory is read with a cap (src/forward/read-capped.ts): error
 * answers are small JSON (`limits.maxSandboxErrorBytes`) and a larger one is the sandbox's
 * failure; buffered successes (Execute, PutFile) get `limits.maxSandboxAnswerBytes`. An
 * Execute answer over it still answers 200, with a result that says the output was dropped
 * (the contract reports failures in the payload; Otari turns any non-2xx into a 502).
 * All reads together stay within `limits.maxBufferedAnswerBytes` (src/forward/byte-budget.ts),
 * each reserving what its answer declares (or its cap) and finishing within the deadline of a
 * call that runs no user code, so a sandbox that trickles cannot keep its share for long. An
 * answer already whole in undici's buffer when its headers are read is taken without a
 * reservation: those bytes are what undici reads ahead of any reader (its high-water mark and
 * one socket read), held whether reserved or not.
 */

import { performance } from "node:perf_hooks";
import { Readable } from "node:stream";
import type { Logger } from "pino";
import { type Dispatcher, errors } from "undici";
import { SandpoolError } from "../contract/error-codes.js";
import { EVENT_STREAM_TYPE } from "../contract/exec-events.js";
import { ByteBudget } from "../forward/byte-budget.js";
import { oversizedExecAnswer } from "../forward/oversized-exec-answer.js";
import { readCapped, takeIfBuffered } from "../forward/read-capped.js";
import {
  answerTooLarge,
  type ForwardRequest,
  isOutlivedBySession,
  mapTransportError,
  SMALL_ANSWER_BYTES,
} from "../forward/sandbox-client.js";
import type { GatewayServices } from "../http/gateway-services.js";
import type { Outcome } from "../operations/handler.js";
import type { Lease } from "../store/coordination/records.js";

export interface SandboxAnswer {
  status: number;
  headers: Record<string, string>;
  /** A stream for successful answers unless `buffer` was asked for; bytes otherwise. */
  body: Readable | Buffer;
}

/** Headers of a sandbox answer that mean the same thing to the gateway's client. */
const PASSED_HEADERS = ["content-type", "content-length", "content-disposition", "retry-after"];

/** Room for 1 MiB of stdout and of stderr even if every byte is JSON-escaped six-fold. */
export const DEFAULT_MAX_SANDBOX_ANSWER_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_SANDBOX_ERROR_BYTES = SMALL_ANSWER_BYTES;
export const DEFAULT_MAX_BUFFERED_ANSWER_BYTES = 128 * 1024 * 1024;
/** The sub-path of Execute, whose oversized answer is a result, not an error. */
const EXEC_SUB_PATH = "/exec";

/** One budget per gateway (its services), made on first use from its limits. */
const budgets = new WeakMap<GatewayServices, ByteBudget>();
export function budgetOf(services: GatewayServices): ByteBudget {
  let budget = budgets.get(services);
  if (!budget) {
    budget = new ByteBudget(services.limits.maxBufferedAnswerBytes ?? DEFAULT_MAX_BUFFERED_ANSWER_BYTES);
    budgets.set(services, budget);
  }
  return budget;
}

export async function forwardToSandbox(
  services: GatewayServices,
  lease: Lease,
  request: Omit<ForwardRequest, "path"> & {
    subPath: string;
    query?: string;
    /** The request's logger (its lines carry the request id); the gateway's otherwise. */
    log?: Logger;
    buffer?: boolean;
    /** A successful event stream (streamed Execute) is returned as a stream even with `buffer`. */
    passEventStream?: boolean;
  },
): Promise<SandboxAnswer> {
  const key = { workspace: lease.workspace, sessionId: lease.sessionId };
  const inner = encodeURIComponent(lease.sandbox.innerSessionId);
  const path = `/sessions/${inner}${request.subPath}${request.query ? `?${request.query}` : ""}`;
  const started = performance.now();
  try {
    const response = await services.sandboxes.send(lease.sandbox.endpoint, { ...request, path });
    const headers: Record<string, string> = {};
    for (const name of PASSED_HEADERS) {
      const value = response.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
    const ok = response.statusCode >= 200 && response.statusCode < 300;
    if (ok && !request.buffer) return { status: response.statusCode, headers, body: response.body };
    if (ok && request.passEventStream && isEventStream(headers["content-type"])) {
      return { status: response.statusCode, headers, body: response.body };
    }
    const limit = ok
      ? (services.limits.maxSandboxAnswerBytes ?? DEFAULT_MAX_SANDBOX_ANSWER_BYTES)
      : (services.limits.maxSandboxErrorBytes ?? DEFAULT_MAX_SANDBOX_ERROR_BYTES);
    const read = await readWithinBudget(services, response, limit);
    if (read.overflowed) {
      (request.log ?? services.log).warn(
        { sandbox: lease.sandbox.sandboxId, status: response.statusCode, limit },
        "a sandbox answered more than the gateway reads",
      );
      if (ok && request.subPath === EXEC_SUB_PATH) {
        return oversizedExecAnswer(request.body, limit, performance.now() - started);
      }
      throw answerTooLarge(limit);
    }
    const body = read.bytes;
    // The length sent on is the one read, whatever the sandbox declared.
    if (headers["content-length"] !== undefined) headers["content-length"] = String(body.length);
    if (response.statusCode === 404 && errorCode(body) === "session.not_found") {
      await services.sessions.end(key, "sandbox_failed");
      throw new SandpoolError("session.not_found", "no such session");
    }
    return { status: response.statusCode, headers, body };
  } catch (error) {
    if (error instanceof SandpoolError && error.code.startsWith("sandbox.") && !isOutlivedBySession(error)) {
      // Someone else ended the session meanwhile (its sandbox closed or destroyed): for the
      // client, it is simply gone.
      if (!(await services.sessions.end(key, "sandbox_failed"))) {
        throw new SandpoolError("session.not_found", "no such session");
      }
    }
    throw error;
  }
}

/**
 * Reads a buffered answer: at most its declared length (undici holds the sandbox to it) or,
 * undeclared, `limit`, reserved from the gateway's budget first (unless all of it is
 * buffered already: nothing is left to read). A declared length above `limit` is refused unread. The wait for the budget and the read must each end within
 * `sandboxRequestTimeoutMs`.
 */
async function readWithinBudget(
  services: GatewayServices,
  response: Dispatcher.ResponseData,
  limit: number,
): Promise<{ bytes: Buffer; overflowed: boolean }> {
  const declared = Number(response.headers["content-length"]);
  const known = typeof response.headers["content-length"] === "string" && Number.isSafeInteger(declared);
  if (known && declared > limit) {
    response.body.destroy();
    return { bytes: Buffer.alloc(0), overflowed: true };
  }
  // Already in memory, so there is nothing to reserve or wait for.
  const buffered = known ? takeIfBuffered(response.body, declared) : undefined;
  if (buffered !== undefined) return { bytes: buffered, overflowed: false };
  // A budget held by others for longer than a read may take is given up on (503), the
  // answer dropped: waiting on it has no end if a holder is stalled.
  const release = await budgetOf(services)
    .reserve(known ? declared : limit, services.limits.sandboxRequestTimeoutMs)
    .catch((error: unknown) => {
      response.body.destroy();
      throw error;
    });
  const deadline = setTimeout(
    () => response.body.destroy(new errors.BodyTimeoutError("the sandbox's answer took too long to read")),
    services.limits.sandboxRequestTimeoutMs,
  );
  try {
    return await readCapped(response.body, known ? declared : limit);
  } catch (error) {
    throw mapTransportError(error);
  } finally {
    clearTimeout(deadline);
    release();
  }
}

/**
 * A sandbox answer as the call's outcome, its bytes as they are: a buffered answer is passed
 * as bytes (written at once), a streamed one as a web stream with backpressure.
 */
export function answerOutcome(answer: SandboxAnswer): Outcome {
  if (answer.status === 204) return { kind: "empty", status: 204, headers: answer.headers };
  const body = Buffer.isBuffer(answer.body)
    ? (answer.body as Uint8Array<ArrayBuffer>)
    : (Readable.toWeb(answer.body) as unknown as ReadableStream<Uint8Array>);
  return { kind: "raw", status: answer.status, headers: answer.headers, body };
}

function isEventStream(contentType: string | undefined): boolean {
  return (contentType ?? "").split(";")[0]!.trim().toLowerCase() === EVENT_STREAM_TYPE;
}

function errorCode(body: Buffer): unknown {
  try {
    return (JSON.parse(body.toString("utf8")) as { detail?: { code?: unknown } }).detail?.code;
  } catch {
    return undefined;
  }
}
