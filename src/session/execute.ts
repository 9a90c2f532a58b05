/**
 * Execute, once the pipeline has admitted it (src/pipeline/: the session resolved, the body
 * validated, the tool allowed, the call's time reserved against the day's budget and the
 * session marked busy, the last three in one store round trip at most): forward it with
 * `timeout_seconds` clamped to the ceiling in force and to the time granted, and a client
 * deadline of that plus a buffer, then settle the reservation with the wall time the gateway
 * measured around the forwarded call (never what the sandbox reports: a sandbox's answers
 * are not trusted), with the call's end, which the answer does not wait for (the store
 * writes it behind, with the workspace's next script). The sandbox's answer is returned
 * byte for byte. Asked for as an event stream, the same steps hold, the answer streams
 * (exec-stream.ts) and the wall time runs to the end of the stream.
 */

import { performance } from "node:perf_hooks";
import { answersWritten } from "../deferred/answers-written.js";
import type { ForwardLimits } from "../forward/sandbox-forwarder.js";
import type { ContractOperation } from "../operations/contract-operations.js";
import { requestedExecSeconds } from "../operations/session-plan.js";
import type { TypedHandler } from "../operations/typed-handlers.js";
import { grantedTimeoutSeconds } from "../policy/decide-limits.js";
import { answerOutcome } from "./answer-outcome.js";
import { type ExecDeps, streamExecution } from "./exec-stream.js";
import { meterExecution } from "./meter-execution.js";
import { withRestartNote } from "./restart-note.js";

/** What Execute needs: an Execute's forwarding and metering, and the buffer on its deadline. */
export type ExecuteDeps = ExecDeps & {
  /** Added to a call's timeout for the client deadline: transport and teardown take time too. */
  limits: ForwardLimits & { execDeadlineBufferMs: number };
};

export function executeHandler(services: ExecuteDeps): TypedHandler<ContractOperation<"sessions.exec">> {
  const bufferMs = services.limits.execDeadlineBufferMs;
  return async (operationCall) => {
    const { key, policy, call } = operationCall.session!;
    const body = operationCall.args.body;
    const { tool } = body;
    const requestedSeconds = requestedExecSeconds(policy!, body);
    const { lease } = call!;
    const timeoutSeconds = grantedTimeoutSeconds(requestedSeconds, call!.grantedMs);
    const deadlineMs = timeoutSeconds * 1000 + bufferMs;
    // Unknown request fields travel on to the sandbox; only the timeout is rewritten.
    const forwarded = JSON.stringify({ ...body, timeout_seconds: timeoutSeconds });
    if (operationCall.args.answer === "event-stream") {
      return streamExecution(services, operationCall.transport, {
        key,
        lease,
        tool,
        call: call!,
        deadlineMs,
        forwarded,
        log: operationCall.log,
      });
    }
    let started: number | undefined;
    try {
      started = performance.now();
      const answer = await services.forwarder.forward(lease, {
        method: "POST",
        subPath: "/exec",
        headers: { "content-type": "application/json" },
        body: forwarded,
        timeoutMs: deadlineMs,
        buffer: true,
        log: operationCall.log,
      });
      return answerOutcome(call!.interpreterRestarted ? withRestartNote(answer) : answer);
    } finally {
      const wallMs = started === undefined ? 0 : performance.now() - started;
      // The call's end is queued once the answer is written, before this replica reads
      // another request (so whatever it sends the store next carries the end or goes behind
      // it): the answer waits neither for the settling nor for it being applied. It cannot
      // fail the call (a store failure leaves the reservation charged in full, and is logged).
      // Its usage record is journaled now, before the answer is released: a replica killed
      // before the end reaches the store leaves it for another to replay.
      const sendEnd = meterExecution(services, tool, call!, wallMs);
      services.pending.track(answersWritten().then(sendEnd));
    }
  };
}
