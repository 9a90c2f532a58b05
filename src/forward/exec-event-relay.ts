/**
 * Relays a sandbox's streamed Execute (src/contract/exec-events.ts) to the gateway's client
 * as it arrives, without holding it whole, and without trusting it:
 *
 * - each output event is parsed and written anew (`{"text": ...}` only); a partial event is
 *   held up to MAX_DELTA_LINE_BYTES, and all output events together may take at most
 *   `maxDeltaBytes` of the sandbox's bytes;
 * - the result event is read like a buffered answer: its bytes reserved from the gateway's
 *   budget, at most `maxResultBytes`, then parsed and written anew (JSON.stringify writes no
 *   line break, so a sandbox cannot add events to its client's stream through it);
 * - CR, LF and CRLF all end a line, as for the client's own SSE parser: a line the relay
 *   took as one cannot be two on the client's side;
 * - past either bound the sandbox is not sound: reading stops and the result event is the
 *   same replacement a buffered answer over the cap gets (oversized-exec-answer.ts);
 * - the whole stream must end within `deadlineMs`. A stream cut by the sandbox (deadline
 *   passed while waiting on it, hang-up, an answer that is not the format) ends with one
 *   `error` event carrying the gateway's error body, and the session ends, as a failed
 *   buffered call's would; a sandbox `error` event is passed on (its session.not_found
 *   ends the session too).
 *
 * A client that goes away does not stop the relay: the rest is read and dropped, so the
 * call is metered to its real end and the session stays busy while it runs. A client that
 * stays but stops reading does not hold the relay past the deadline either: the relay pauses
 * while the client does not read, and whatever it holds (the result's reservation from the
 * budget every call shares) would be held as long, so at the deadline it ends and the body
 * is closed where it stands (the caller closes the client's connection, so the cut shows).
 * `done` settles once the relay is
 * over (or the deadline passed), exactly once.
 */
import { performance } from "node:perf_hooks";
import type { Readable } from "node:stream";
import { type ErrorBody, errorBody, SandpoolError } from "../contract/error-codes.js";
import { type ExecEventName, formatEvent, outputEvent } from "../contract/exec-events.js";
import { mapTransportError } from "./sandbox-client.js";
import { prefixStderr } from "./stderr-note.js";

/** Largest single output event held while it arrives (a sound sandbox sends <= ~400 KiB). */
export const MAX_DELTA_LINE_BYTES = 1024 * 1024;

export interface RelayOptions {
  /** All output events' bytes, as the sandbox sent them. */
  maxDeltaBytes: number;
  /** The result event's data, like a buffered answer. */
  maxResultBytes: number;
  /** The data of a sandbox error event. */
  maxErrorBytes: number;
  /** From now until the stream must have ended. */
  deadlineMs: number;
  /**
   * Reserves bytes from the gateway's answer budget, waiting at most `timeoutMs` (the time
   * left to the deadline); resolves with the release.
   */
  reserve(bytes: number, timeoutMs: number): Promise<() => void>;
  /** The result event's data when the sandbox sent more than it may. */
  oversizedResult(): string;
  /** The sandbox failed (or lost the session): end the session. Must not throw. */
  onSandboxFailure(error: SandpoolError): Promise<void>;
  /** Sent as the first stderr event, and put before the result's stderr (stderr-note.ts). */
  stderrNote?: string;
  /**
   * Called once the result is read, before its event is written: the call's usage is
   * journaled there, so no answered call goes unbilled if the replica dies right after.
   */
  onResult?: () => void;
}

export interface Relay {
  body: ReadableStream<Uint8Array>;
  /** Settles once, when the relay is over or the deadline passed. */
  done: Promise<void>;
}

const KNOWN_EVENTS = new Set<ExecEventName>(["stdout", "stderr", "result", "error"]);

class Oversized extends Error {}

export function relayExecEvents(upstream: Readable, options: RelayOptions): Relay {
  let settle!: () => void;
  const done = new Promise<void>((resolve) => {
    settle = resolve;
  });
  let waitingOnSandbox = false;
  let deadlinePassed = false;
  let cutForClient = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let bodyClosed = false;
  const endsAt = performance.now() + options.deadlineMs;
  const deadline = setTimeout(() => {
    deadlinePassed = true;
    // Only a sandbox that has not answered in time is at fault; a client that stopped
    // reading is not, and its stream is merely cut (the session lives on).
    if (waitingOnSandbox) {
      upstream.destroy(new SandpoolError("sandbox.timeout", "the sandbox did not answer in time"));
    } else {
      cutForClient = true;
      upstream.destroy();
      // Paused at a yield, the relay runs on only when the client reads: end it here, so
      // its finally gives back what it holds now, not whenever (if ever) the client reads.
      void run.return(undefined);
      closeBody();
      settle();
    }
  }, options.deadlineMs);

  const events = relayEvents(upstream, options, {
    remainingMs: () => Math.max(0, endsAt - performance.now()),
    setWaiting: (waiting) => {
      waitingOnSandbox = waiting;
    },
    deadlinePassed: () => deadlinePassed,
    cutForClient: () => cutForClient,
  });
  const run = (async function* () {
    try {
      yield* events;
    } finally {
      clearTimeout(deadline);
      upstream.destroy();
      settle();
    }
  })();

  const encoder = new TextEncoder();
  const closeBody = () => {
    if (bodyClosed) return;
    bodyClosed = true;
    controller.close();
  };
  const body = new ReadableStream<Uint8Array>({
    start(streamController) {
      controller = streamController;
    },
    async pull() {
      const next = await run.next();
      if (bodyClosed) return;
      if (next.done) return closeBody();
      controller.enqueue(encoder.encode(next.value));
      if (deadlinePassed) {
        // Past the deadline the relay no longer waits for the client to take each event:
        // what is left (one small error event) is queued now and the relay ends.
        for await (const value of run) if (!bodyClosed) controller.enqueue(encoder.encode(value));
        closeBody();
      }
    },
    cancel() {
      bodyClosed = true;
      // Read the rest and drop it, so metering and the busy mark see the call's real end.
      void (async () => {
        for await (const _ of run) {
          // dropped
        }
      })();
    },
  });
  return { body, done };
}

interface RelayControl {
  remainingMs(): number;
  setWaiting(waiting: boolean): void;
  deadlinePassed(): boolean;
  cutForClient(): boolean;
}

async function* relayEvents(
  upstream: Readable,
  options: RelayOptions,
  control: RelayControl,
): AsyncGenerator<string> {
  const reader = new LineReader();
  let event: ExecEventName | undefined;
  let data: string | undefined;
  let deltaBytes = 0;
  let releaseResult: (() => void) | undefined;
  const iterator = upstream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const note = options.stderrNote;
  try {
    if (note !== undefined) yield outputEvent("stderr", note);
    while (true) {
      control.setWaiting(true);
      let next: IteratorResult<Buffer>;
      try {
        next = await iterator.next();
      } finally {
        control.setWaiting(false);
      }
      if (next.done) break;
      for (const line of reader.push(next.value, () => lineCap(event, options))) {
        if (event === "stdout" || event === "stderr") {
          deltaBytes += Buffer.byteLength(line) + 1;
          if (deltaBytes > options.maxDeltaBytes) throw new Oversized();
        }
        if (line.length === 0) {
          if (event === undefined || data === undefined) throw badAnswer("an event without data");
          if (event === "result") {
            const result = reserialized(data, "a result");
            options.onResult?.();
            yield formatEvent("result", note === undefined ? result : (prefixStderr(result, note) ?? result));
            return;
          }
          if (event === "error") {
            yield* sandboxError(data, options);
            return;
          }
          yield outputEvent(event, deltaText(data));
          event = undefined;
          data = undefined;
        } else if (line.startsWith("event: ") && event === undefined) {
          const name = line.slice("event: ".length) as ExecEventName;
          if (!KNOWN_EVENTS.has(name)) throw badAnswer("an unknown event");
          event = name;
          // Reserved before the result is read, as for a buffered answer.
          if (name === "result") {
            releaseResult = await options.reserve(options.maxResultBytes, control.remainingMs());
          }
        } else if (line.startsWith("data: ") && event !== undefined && data === undefined) {
          data = line.slice("data: ".length);
        } else {
          throw badAnswer("a line out of the event format");
        }
      }
    }
    throw badAnswer("the stream ended before its result");
  } catch (error) {
    if (error instanceof Oversized) {
      yield formatEvent("result", options.oversizedResult());
      return;
    }
    if (control.cutForClient()) return; // nobody is reading; the sandbox did nothing wrong
    if (error instanceof SandpoolError && !error.code.startsWith("sandbox.")) {
      // The gateway's own limit (its answer budget stayed spent): the session is sound.
      yield formatEvent("error", JSON.stringify(error.toBody()));
      return;
    }
    const failure =
      control.deadlinePassed() && !(error instanceof SandpoolError && error.code === "sandbox.bad_answer")
        ? new SandpoolError("sandbox.timeout", "the sandbox did not answer in time")
        : mapTransportError(error);
    await options.onSandboxFailure(failure);
    yield formatEvent("error", JSON.stringify(failure.toBody()));
  } finally {
    releaseResult?.();
  }
}

function lineCap(event: ExecEventName | undefined, options: RelayOptions): number {
  const prefix = "data: ".length;
  if (event === "result") return options.maxResultBytes + prefix;
  if (event === "error") return options.maxErrorBytes + prefix;
  return MAX_DELTA_LINE_BYTES;
}

/** JSON text written anew, so nothing of the sandbox's bytes but their meaning passes. */
export function reserialized(data: string, what: string): string {
  try {
    return JSON.stringify(JSON.parse(data));
  } catch {
    throw badAnswer(`${what} that is not JSON`);
  }
}

function deltaText(data: string): string {
  try {
    const parsed = JSON.parse(data) as { text?: unknown };
    if (typeof parsed.text === "string") return parsed.text;
  } catch {
    // below
  }
  throw badAnswer('an output event that is not {"text": ...}');
}

async function* sandboxError(data: string, options: RelayOptions): AsyncGenerator<string> {
  let body: ErrorBody | undefined;
  try {
    body = JSON.parse(data) as ErrorBody;
  } catch {
    throw badAnswer("an error event that is not JSON");
  }
  if (body?.detail?.code === "session.not_found") {
    await options.onSandboxFailure(new SandpoolError("session.not_found", "no such session"));
    yield formatEvent("error", JSON.stringify(errorBody("session.not_found", "no such session")));
    return;
  }
  yield formatEvent("error", JSON.stringify(body));
}

export function badAnswer(what: string): SandpoolError {
  return new SandpoolError("sandbox.bad_answer", `the sandbox's event stream had ${what}`);
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Splits bytes into lines ending in CR, LF or CRLF (the sandbox writes LF, but an SSE parser
 * takes all three, and so must the relay), never holding a partial line longer than the cap
 * in force: past it, the answer is oversized.
 */
export class LineReader {
  private partial: Buffer[] = [];
  private partialBytes = 0;
  /** The last chunk ended in CR: an LF starting the next one belongs to that line end. */
  private afterCR = false;

  /** `cap` is asked at each check: the event a line belongs to can change within a chunk. */
  *push(chunk: Buffer, cap: () => number): Generator<string> {
    let start = 0;
    if (this.afterCR && chunk.length > 0) {
      this.afterCR = false;
      if (chunk[0] === LF) start = 1;
    }
    const ends = new LineEnds(chunk);
    let end = ends.after(start);
    while (end >= 0) {
      const piece = chunk.subarray(start, end);
      if (this.partialBytes + piece.length > cap()) throw new Oversized();
      const line = Buffer.concat([...this.partial, piece]).toString("utf8");
      this.partial = [];
      this.partialBytes = 0;
      start = end + 1;
      if (chunk[end] === CR) {
        if (start === chunk.length) this.afterCR = true;
        else if (chunk[start] === LF) start += 1;
      }
      yield line;
      end = ends.after(start);
    }
    const rest = chunk.subarray(start);
    if (this.partialBytes + rest.length > cap()) throw new Oversized();
    if (rest.length > 0) {
      this.partial.push(rest);
      this.partialBytes += rest.length;
    }
  }
}

/** Finds line ends in one chunk, each byte searched once (a chunk may hold many lines). */
class LineEnds {
  private lf = -2;
  private cr = -2;

  constructor(private readonly chunk: Buffer) {}

  /** The first CR or LF at or after `start`, or -1. */
  after(start: number): number {
    // -2: not searched yet; -1: none left; a position before `start`: search on from it.
    if (this.lf === -2 || (this.lf >= 0 && this.lf < start)) this.lf = this.chunk.indexOf(LF, start);
    if (this.cr === -2 || (this.cr >= 0 && this.cr < start)) this.cr = this.chunk.indexOf(CR, start);
    if (this.lf < 0) return this.cr;
    if (this.cr < 0) return this.lf;
    return Math.min(this.lf, this.cr);
  }
}
