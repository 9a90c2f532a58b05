/**
 * The one way a call reaches the sandbox serving its session: sends the request and turns
 * what can go wrong into the session's end, through the failure callback it is given (the
 * session layer's `end`; forwarding never imports the session layer). A sandbox that is
 * unreachable or times out fails the session (its state is in doubt), and so does a sandbox
 * that no longer knows the inner session. The client then gets 502/504, or the same 404 as
 * for any unknown session; a failure of a session someone else ended meanwhile (the end
 * closes the sandbox's session first) is that 404 too.
 *
 * Successful answers stream back untouched (bodies and unknown fields pass through), with
 * backpressure: a slow client slows the sandbox, the gateway holds no more than its buffers.
 * Every answer read into memory is read with a cap (read-capped.ts): error answers are small
 * JSON (`maxSandboxErrorBytes`) and a larger one is the sandbox's failure; buffered successes
 * (Execute, PutFile) get `maxSandboxAnswerBytes`. An Execute answer over it still answers
 * 200, with a result that says the output was dropped (the contract reports failures in the
 * payload; Otari turns any non-2xx into a 502). All reads together stay within the byte
 * budget (byte-budget.ts), each reserving what its answer declares (or its cap) and finishing
 * within the deadline of a call that runs no user code, so a sandbox that trickles cannot
 * keep its share for long. An answer already whole in undici's buffer when its headers are
 * read is taken without a reservation: those bytes are what undici reads ahead of any reader
 * (its high-water mark and one socket read), held whether reserved or not.
 *
 * A streamed Execute (`forwardExecStream`) is relayed event by event (exec-event-relay.ts)
 * under the same caps and budget; a sandbox that answers plain JSON (one without streaming)
 * has its answer sent as the result event.
 */

import { performance } from "node:perf_hooks";
import type { Readable } from "node:stream";
import type { Logger } from "pino";
import { type Dispatcher, errors } from "undici";
import { SandpoolError } from "../contract/error-codes.js";
import { EVENT_STREAM_TYPE, formatEvent, outputEvent } from "../contract/exec-events.js";
import type { Lease, LeaseKey } from "../store/coordination/records.js";
import { ByteBudget } from "./byte-budget.js";
import { relayExecEvents, reserialized } from "./exec-event-relay.js";
import { oversizedExecAnswer } from "./oversized-exec-answer.js";
import { readCapped, takeIfBuffered } from "./read-capped.js";
import {
  answerTooLarge,
  type ForwardRequest,
  isOutlivedBySession,
  mapTransportError,
  type SandboxClient,
  SMALL_ANSWER_BYTES,
} from "./sandbox-client.js";
import { prefixStderr } from "./stderr-note.js";

export interface SandboxAnswer {
  status: number;
  headers: Record<string, string>;
  /** A stream for successful answers unless `buffer` was asked for; bytes otherwise. */
  body: Readable | Buffer;
}

/** A streamed Execute as the forwarder hands it on. */
export type ExecEventStream =
  /** The sandbox refused (not 200): its answer, as for a buffered call. */
  | { kind: "answer"; answer: SandboxAnswer }
  /** Events for the client; `done` resolves (never rejects) once the relay has ended. */
  | { kind: "events"; body: ReadableStream<Uint8Array> | string; done: Promise<void> };

/** Room for 1 MiB of stdout and of stderr even if every byte is JSON-escaped six-fold. */
export const DEFAULT_MAX_SANDBOX_ANSWER_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_SANDBOX_ERROR_BYTES = SMALL_ANSWER_BYTES;
export const DEFAULT_MAX_BUFFERED_ANSWER_BYTES = 128 * 1024 * 1024;
/** The sub-path of Execute, whose oversized answer is a result, not an error. */
const EXEC_SUB_PATH = "/exec";

/** The limits forwarding reads (a part of the gateway's `limits`). */
export interface ForwardLimits {
  /** Deadline for answers that involve no user code, and for reading a buffered answer. */
  sandboxRequestTimeoutMs: number;
  maxSandboxAnswerBytes?: number;
  maxSandboxErrorBytes?: number;
  /** The byte budget's size, all calls together (default 128 MiB). */
  maxBufferedAnswerBytes?: number;
}

export interface SandboxForwarderDeps {
  client: Pick<SandboxClient, "send">;
  limits: ForwardLimits;
  /** The gateway's logger, for calls that bring none of their own. */
  log: Logger;
  /**
   * The sandbox failed the session: end it. Resolves true when this call ended it, false
   * when someone else had already (the client then gets the 404 of an unknown session).
   */
  onSessionFailed(key: LeaseKey): Promise<boolean>;
}

export type SandboxRequest = Omit<ForwardRequest, "path"> & {
  subPath: string;
  query?: string;
  /** The request's logger (its lines carry the request id); the gateway's otherwise. */
  log?: Logger;
  buffer?: boolean;
  /** A successful event stream (streamed Execute) is returned as a stream even with `buffer`. */
  passEventStream?: boolean;
};

export class SandboxForwarder {
  /** The bytes of answers held in memory at once, all calls of this gateway together. */
  readonly budget: ByteBudget;

  constructor(private readonly deps: SandboxForwarderDeps) {
    this.budget = new ByteBudget(deps.limits.maxBufferedAnswerBytes ?? DEFAULT_MAX_BUFFERED_ANSWER_BYTES);
  }

  private get maxAnswerBytes(): number {
    return this.deps.limits.maxSandboxAnswerBytes ?? DEFAULT_MAX_SANDBOX_ANSWER_BYTES;
  }

  private get maxErrorBytes(): number {
    return this.deps.limits.maxSandboxErrorBytes ?? DEFAULT_MAX_SANDBOX_ERROR_BYTES;
  }

  async forward(lease: Lease, request: SandboxRequest): Promise<SandboxAnswer> {
    const key = { workspace: lease.workspace, sessionId: lease.sessionId };
    const inner = encodeURIComponent(lease.sandbox.innerSessionId);
    const path = `/sessions/${inner}${request.subPath}${request.query ? `?${request.query}` : ""}`;
    const started = performance.now();
    try {
      const response = await this.deps.client.send(lease.sandbox.endpoint, { ...request, path });
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
      const limit = ok ? this.maxAnswerBytes : this.maxErrorBytes;
      const read = await this.readWithinBudget(response, limit);
      if (read.overflowed) {
        (request.log ?? this.deps.log).warn(
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
        await this.deps.onSessionFailed(key);
        throw new SandpoolError("session.not_found", "no such session");
      }
      return { status: response.statusCode, headers, body };
    } catch (error) {
      if (
        error instanceof SandpoolError &&
        error.code.startsWith("sandbox.") &&
        !isOutlivedBySession(error)
      ) {
        // Someone else ended the session meanwhile (its sandbox closed or destroyed): for the
        // client, it is simply gone.
        if (!(await this.deps.onSessionFailed(key))) {
          throw new SandpoolError("session.not_found", "no such session");
        }
      }
      throw error;
    }
  }

  /**
   * A streamed Execute: `body` is the request sent on, `deadlineMs` the client's deadline
   * from now. A failure before the stream starts is thrown, as for a buffered call.
   */
  async forwardExecStream(
    lease: Lease,
    request: { body: string; deadlineMs: number; log: Logger; stderrNote?: string; onResult?: () => void },
  ): Promise<ExecEventStream> {
    const key = { workspace: lease.workspace, sessionId: lease.sessionId };
    const started = performance.now();
    const answer = await this.forward(lease, {
      method: "POST",
      subPath: EXEC_SUB_PATH,
      headers: { "content-type": "application/json", accept: EVENT_STREAM_TYPE },
      body: request.body,
      timeoutMs: request.deadlineMs,
      buffer: true,
      passEventStream: true,
      log: request.log,
    });
    if (answer.status !== 200) return { kind: "answer", answer };
    if (Buffer.isBuffer(answer.body)) {
      // A sandbox without streaming answered JSON (read with the buffered caps): one event,
      // its JSON written anew so no line break of the sandbox's can start another.
      let result: string;
      try {
        result = reserialized(answer.body.toString("utf8"), "an answer");
      } catch (error) {
        await this.deps.onSessionFailed(key);
        throw error;
      }
      const { stderrNote: note } = request;
      const events =
        note === undefined
          ? formatEvent("result", result)
          : outputEvent("stderr", note) + formatEvent("result", prefixStderr(result, note) ?? result);
      return { kind: "events", body: events, done: Promise.resolve() };
    }
    const maxAnswer = this.maxAnswerBytes;
    const relay = relayExecEvents(answer.body, {
      maxDeltaBytes: maxAnswer,
      maxResultBytes: maxAnswer,
      maxErrorBytes: this.maxErrorBytes,
      deadlineMs: Math.max(0, request.deadlineMs - (performance.now() - started)),
      reserve: (bytes, timeoutMs) => this.budget.reserve(bytes, timeoutMs),
      oversizedResult: () => {
        request.log.warn(
          { sandbox: lease.sandbox.sandboxId, limit: maxAnswer },
          "a sandbox streamed more than the gateway reads",
        );
        return oversizedExecAnswer(request.body, maxAnswer, performance.now() - started).body.toString(
          "utf8",
        );
      },
      ...(request.stderrNote === undefined ? {} : { stderrNote: request.stderrNote }),
      ...(request.onResult === undefined ? {} : { onResult: request.onResult }),
      onSandboxFailure: async (error) => {
        request.log.warn({ err: error, session: key.sessionId }, "a streamed call's sandbox failed");
        await this.deps.onSessionFailed(key).catch((endError) => {
          request.log.warn({ err: endError, session: key.sessionId }, "could not end a session");
        });
      },
    });
    return { kind: "events", body: relay.body, done: relay.done };
  }

  /**
   * Reads a buffered answer: at most its declared length (undici holds the sandbox to it) or,
   * undeclared, `limit`, reserved from the budget first (unless all of it is buffered
   * already: nothing is left to read). A declared length above `limit` is refused unread.
   * The wait for the budget and the read must each end within `sandboxRequestTimeoutMs`.
   */
  private async readWithinBudget(
    response: Dispatcher.ResponseData,
    limit: number,
  ): Promise<{ bytes: Buffer; overflowed: boolean }> {
    const timeoutMs = this.deps.limits.sandboxRequestTimeoutMs;
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
    const release = await this.budget.reserve(known ? declared : limit, timeoutMs).catch((error: unknown) => {
      response.body.destroy();
      throw error;
    });
    const deadline = setTimeout(
      () => response.body.destroy(new errors.BodyTimeoutError("the sandbox's answer took too long to read")),
      timeoutMs,
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
}

/** Headers of a sandbox answer that mean the same thing to the gateway's client. */
const PASSED_HEADERS = ["content-type", "content-length", "content-disposition", "retry-after"];

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
