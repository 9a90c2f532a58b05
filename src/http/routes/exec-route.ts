/**
 * Execute through the pipeline: resolve the session (404) -> validate (400 unknown tool,
 * 422 malformed) -> policy (403 tool not allowed) -> reserve the call's time against the
 * day's budget (429 when none remains) and mark the session busy, the last two with the
 * resolution in one store round trip (a refusal of the body resolves the session first, so
 * the 404 still comes first) -> forward with `timeout_seconds` clamped to the
 * ceiling in force and to the time granted, and a client deadline of that plus a buffer ->
 * settle the reservation with the wall time the gateway measured around the forwarded call
 * (never what the sandbox reports: a sandbox's answers are not trusted), with the call's
 * end in one more round trip, which the answer does not wait for. The sandbox's
 * answer is returned byte for byte. With `Accept: text/event-stream` the same steps hold,
 * the answer streams (exec-stream.ts) and the wall time runs to the end of the stream.
 */

import { performance } from "node:perf_hooks";
import type { Hono, MiddlewareHandler } from "hono";
import { wantsEventStream } from "../../contract/exec-events.js";
import { parseExecRequest } from "../../contract/parse-exec-request.js";
import { toolAllowed } from "../../policy/decide-access.js";
import { execTimeout, grantedTimeoutSeconds } from "../../policy/decide-limits.js";
import { enforce } from "../../policy/verdict.js";
import { pendingWorkOf } from "../common/pending-work.js";
import { readJsonBody } from "../common/read-json-body.js";
import type { GatewayEnv } from "../gateway-env.js";
import type { GatewayServices } from "../gateway-services.js";
import { streamExecution } from "./exec-stream.js";
import { forwardToSandbox, toResponse } from "./forward-to-sandbox.js";
import { meterExecution } from "./meter-execution.js";
import { refuseInOrder, sessionCallPolicy } from "./open-session-call.js";

export function registerExecRoute(
  app: Hono<GatewayEnv>,
  services: GatewayServices,
  jsonLimit: MiddlewareHandler<GatewayEnv>,
): void {
  app.post("/sessions/:id/exec", jsonLimit, async (c) => {
    const { key, policy } = await sessionCallPolicy(c, services);
    let body: unknown;
    let request: ReturnType<typeof parseExecRequest>;
    try {
      body = await readJsonBody(c);
      request = parseExecRequest(body);
      enforce(toolAllowed(policy, request.tool));
    } catch (error) {
      return refuseInOrder(services, key, error);
    }
    const tool = request.tool;
    const requestedSeconds = execTimeout(policy, request.timeout_seconds).value;
    const bufferMs = services.limits.execDeadlineBufferMs;
    // One round trip: the session resolved, the time reserved, the session marked busy until
    // the longest the call may take (the time granted can only shorten it).
    const call = await services.sessions.beginCall(key, {
      deadlineMs: requestedSeconds * 1000 + bufferMs,
      budget: { policy, requestedMs: requestedSeconds * 1000 },
    });
    const { lease } = call;
    const timeoutSeconds = grantedTimeoutSeconds(requestedSeconds, call.grantedMs);
    const deadlineMs = timeoutSeconds * 1000 + bufferMs;
    // Unknown request fields travel on to the sandbox; only the timeout is rewritten.
    const forwarded = JSON.stringify({ ...(body as object), timeout_seconds: timeoutSeconds });
    if (wantsEventStream(c.req.header("accept"))) {
      return streamExecution(c, services, { key, lease, tool, call, deadlineMs, forwarded });
    }
    let started: number | undefined;
    try {
      started = performance.now();
      const answer = await forwardToSandbox(services, lease, {
        method: "POST",
        subPath: "/exec",
        headers: { "content-type": "application/json" },
        body: forwarded,
        timeoutMs: deadlineMs,
        buffer: true,
      });
      return toResponse(c, answer);
    } finally {
      const wallMs = started === undefined ? 0 : performance.now() - started;
      // The call's end is sent now, before the answer is written (so this replica's next
      // command for the session queues behind it on the connection), but the answer does not
      // wait for its reply: one store round trip less on every Execute. It cannot fail the
      // call (a store failure leaves the reservation charged in full, and is logged).
      pendingWorkOf(services).track(meterExecution(services, key, tool, call, wallMs));
    }
  });
}
