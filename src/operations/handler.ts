/**
 * What an operation's handler sees and gives back. A handler never sees HTTP: the pipeline
 * (transport, parse, route, authenticate, mounted, args, policy, admit) has run before it,
 * and hands it the admitted arguments; it answers with an outcome that the HTTP layer
 * renders, or that an in-process `call()` returns as it is.
 */
import type { Readable } from "node:stream";
import type { Logger } from "pino";
import type { Caller } from "../auth/principal.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { OperationSpec } from "./operation.js";
import type { ResolvedSession } from "./resolved-session.js";

/** An operation's arguments, admitted (parsed and validated against its declared schemas). */
export interface CallArgs {
  /** Path parameters (`{id}` of `/sessions/{id}`). */
  params: Record<string, string>;
  /** Query parameters (first value of each). */
  query: Record<string, string>;
  /** The parsed JSON body, for operations that take one. */
  body?: unknown;
  /** A streamed request body (multipart upload), for operations that take bytes. */
  stream?: { contentType: string; contentLength?: number; body: Readable };
  /** The answer kind the caller accepts, among the operation's own (`event-stream` for a streamed Execute). */
  answer?: OperationSpec["answers"][number];
}

export interface OperationCall {
  operation: OperationSpec;
  caller: Caller;
  args: CallArgs;
  requestId: string;
  log: Logger;
  /** Aborted when the caller goes away. */
  signal?: AbortSignal;
  /** The workspace's policy in force, for a contract operation gated by it (the policy step). */
  policy?: EffectivePolicy;
  /** What the pipeline's resolve, policy and admit steps admitted, for a call on a session. */
  session?: ResolvedSession;
  /** What a streamed answer may ask of the transport that carries it (absent in-process). */
  transport?: CallTransport;
}

/** A call apart from its arguments: what a helper of several handlers reads of any of them. */
export type CallContext = Omit<OperationCall, "args">;

/** Hooks of the transport for an answer that outlives its handler (a streamed Execute). */
export interface CallTransport {
  /** Keeps the call counted in flight until the returned release is called. */
  holdCallInFlight?(): () => void;
  /** Closes the connection if the answer is not delivered within `ms` (a client that stopped reading). */
  closeUndeliveredAfter?(ms: number): void;
}

export type Outcome =
  | { kind: "json"; status: number; body: unknown; headers?: Record<string, string> }
  /** Bytes passed on as they are: a sandbox's answer, a file, an event stream, metrics text. */
  | {
      kind: "raw";
      status: number;
      headers: Record<string, string>;
      body: string | Uint8Array | ReadableStream<Uint8Array>;
    }
  | { kind: "empty"; status: number; headers?: Record<string, string> };

export type OperationHandler = (call: OperationCall) => Promise<Outcome>;

/** The handlers of a group of operations, by operation id. */
export type OperationHandlers = Readonly<Record<string, OperationHandler>>;
