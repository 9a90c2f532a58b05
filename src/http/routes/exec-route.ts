/**
 * Execute through the pipeline: resolve the session (404) -> validate (400 unknown tool,
 * 422 malformed) -> policy (403 tool not allowed) -> reserve the call's time against the
 * day's budget (429 when none remains) -> forward with `timeout_seconds` clamped to the
 * ceiling in force and to the time granted, and a client deadline of that plus a buffer ->
 * settle the reservation with the wall time the gateway measured around the forwarded call
 * (never what the sandbox reports: a sandbox's answers are not trusted). The sandbox's
 * answer is returned byte for byte. With `Accept: text/event-stream` the same steps hold,
 * the answer streams (exec-stream.ts) and the wall time runs to the end of the stream.
 */

import { performance } from "node:perf_hooks";
import type { Hono, MiddlewareHandler } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import { wantsEventStream } from "../../contract/exec-events.js";
import { parseExecRequest } from "../../contract/parse-exec-request.js";
import { readJsonBody } from "../common/read-json-body.js";
import type { GatewayEnv } from "../gateway-env.js";
import type { GatewayServices } from "../gateway-services.js";
import { streamExecution } from "./exec-stream.js";
import { forwardToSandbox, toResponse } from "./forward-to-sandbox.js";
import { meterExecution } from "./meter-execution.js";
import { openSessionCall } from "./open-session-call.js";

export function registerExecRoute(
  app: Hono<GatewayEnv>,
  services: GatewayServices,
  jsonLimit: MiddlewareHandler<GatewayEnv>,
): void {
  app.post("/sessions/:id/exec", jsonLimit, async (c) => {
    const { key, lease, policy } = await openSessionCall(c, services);
    const body = await readJsonBody(c);
    const request = parseExecRequest(body);
    const tool = request.tool;

    if (!policy.allowedTools.includes(tool)) {
      throw new SandpoolError(
        "policy.tool_not_allowed",
        `the tool '${tool}' is not allowed for this workspace`,
      );
    }
    const requestedSeconds = Math.min(
      request.timeout_seconds ?? policy.defaultExecTimeoutSeconds,
      policy.execTimeoutCeilingSeconds,
    );
    const reservation = await services.admission.reserveExec(policy, requestedSeconds * 1000);
    // Whole seconds, rounded down so the call cannot outrun what was granted (below one
    // second granted, one second: the last call of a day may overrun that little).
    const timeoutSeconds = Math.max(1, Math.min(requestedSeconds, Math.floor(reservation.grantedMs / 1000)));
    const deadlineMs = timeoutSeconds * 1000 + services.limits.execDeadlineBufferMs;
    // Unknown request fields travel on to the sandbox; only the timeout is rewritten.
    const forwarded = JSON.stringify({ ...(body as object), timeout_seconds: timeoutSeconds });
    if (wantsEventStream(c.req.header("accept"))) {
      return streamExecution(c, services, { key, lease, tool, reservation, deadlineMs, forwarded });
    }
    let started: number | undefined;
    try {
      const answer = await services.sessions.whileBusy(key, deadlineMs, () => {
        started = performance.now();
        return forwardToSandbox(services, lease, {
          method: "POST",
          subPath: "/exec",
          headers: { "content-type": "application/json" },
          body: forwarded,
          timeoutMs: deadlineMs,
          buffer: true,
        });
      });
      return toResponse(c, answer);
    } finally {
      const wallMs = started === undefined ? 0 : performance.now() - started;
      await meterExecution(services, key, tool, reservation, wallMs);
    }
  });
}
