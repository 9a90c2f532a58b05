/**
 * A streamed Execute through the gateway (`Accept: text/event-stream`, the extension in
 * src/contract/exec-events.ts). Admission, policy, the budget reservation and the busy mark
 * have run in the pipeline; this keeps every limit of a buffered call until the stream ends, not
 * until the handler returns: the session is marked busy, the call keeps its place among
 * the workspace's calls in flight, and the reservation is settled with the wall time from
 * the forward to the end of the stream. An error before the stream starts (the sandbox's
 * or the gateway's) is answered as JSON with its status, as without the header. The relay
 * of the events themselves is forwarding's (src/forward/sandbox-forwarder.ts).
 */

import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import { EVENT_STREAM_HEADERS } from "../contract/exec-events.js";
import type { PendingWork } from "../deferred/pending-work.js";
import type { SandboxForwarder } from "../forward/sandbox-forwarder.js";
import { INTERPRETER_RESTARTED_NOTE } from "../hibernate/hibernate-sandbox.js";
import type { CallTransport, Outcome } from "../operations/handler.js";
import type { OpenCall } from "../operations/resolved-session.js";
import type { Lease, LeaseKey } from "../store/coordination/records.js";
import { answerOutcome } from "./answer-outcome.js";
import { type MeterDeps, meterExecution } from "./meter-execution.js";

/** What an Execute needs: forwarding, metering, and the pending work its settlement joins. */
export type ExecDeps = MeterDeps & { forwarder: SandboxForwarder; pending: PendingWork };

/** How long after the deadline a client has to take the stream's last event. */
const DELIVERY_GRACE_MS = 2_000;

export interface StreamedCall {
  key: LeaseKey;
  lease: Lease;
  tool: string;
  /** The call begun (session busy, time reserved): ended with the stream. */
  call: OpenCall;
  deadlineMs: number;
  /** The request body sent on to the sandbox. */
  forwarded: string;
  /** The request's logger: its lines carry the request id. */
  log: Logger;
}

export async function streamExecution(
  services: ExecDeps,
  transport: CallTransport | undefined,
  call: StreamedCall,
): Promise<Outcome> {
  const releaseSlot = transport?.holdCallInFlight?.();
  let started: number | undefined;
  let finished = false;
  // The call's end, once: tracked like a plain Execute's (the gateway's close waits for it),
  // and never waited for by the answer (it is queued for the store before the answer is
  // written, so the replica's next command for the session goes behind it).
  const couldNotClose = (error: unknown) =>
    call.log.warn({ err: error, session: call.key.sessionId }, "could not close a streamed call");
  const finish = () => {
    if (finished) return;
    finished = true;
    const wallMs = started === undefined ? 0 : performance.now() - started;
    const settled = meterExecution(services, call.tool, call.call, wallMs)();
    services.pending.track(settled);
    settled.catch(couldNotClose).finally(() => releaseSlot?.());
  };

  try {
    started = performance.now();
    const stream = await services.forwarder.forwardExecStream(call.lease, {
      body: call.forwarded,
      deadlineMs: call.deadlineMs,
      log: call.log,
      ...(call.call.interpreterRestarted ? { stderrNote: INTERPRETER_RESTARTED_NOTE } : {}),
      // The result's event goes out after the call's usage is journaled (meterExecution).
      onResult: finish,
    });
    if (stream.kind === "answer") {
      finish();
      return answerOutcome(stream.answer);
    }
    // `done` only resolves (the relay settles every way it can end), and `finish` catches.
    void stream.done.then(finish);
    if (typeof stream.body === "string")
      return { kind: "raw", status: 200, headers: EVENT_STREAM_HEADERS, body: stream.body };
    // A client that stops reading would otherwise hold the stream, and the events written to
    // it, forever: the transport closes it once the deadline and a grace have passed.
    transport?.closeUndeliveredAfter?.(
      Math.max(0, call.deadlineMs - (performance.now() - started)) + DELIVERY_GRACE_MS,
    );
    return { kind: "raw", status: 200, headers: EVENT_STREAM_HEADERS, body: stream.body };
  } catch (error) {
    finish();
    throw error;
  }
}
