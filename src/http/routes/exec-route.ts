/**
 * Execute through the pipeline: resolve the session (404) -> validate (400 unknown tool,
 * 422 malformed) -> policy (403 tool not allowed) -> admit (429 budget spent) -> forward
 * with `timeout_seconds` clamped to the ceiling in force and a client deadline of that
 * plus a buffer -> meter the execution time the sandbox reports. The sandbox's answer is
 * returned byte for byte.
 */

import type { Hono, MiddlewareHandler } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import { parseExecRequest } from "../../contract/parse-exec-request.js";
import { readJsonBody } from "../common/read-json-body.js";
import type { GatewayEnv } from "../gateway-env.js";
import type { GatewayServices } from "../gateway-services.js";
import { forwardToSandbox, toResponse } from "./forward-to-sandbox.js";
import { openSessionCall } from "./open-session-call.js";

export function registerExecRoute(
  app: Hono<GatewayEnv>,
  services: GatewayServices,
  jsonLimit: MiddlewareHandler<GatewayEnv>,
): void {
  app.post("/sessions/:id/exec", jsonLimit, async (c) => {
    c.set("operation", "Execute");
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
    await services.admission.checkExecBudget(policy);

    const timeoutSeconds = Math.min(
      request.timeout_seconds ?? policy.defaultExecTimeoutSeconds,
      policy.execTimeoutCeilingSeconds,
    );
    const deadlineMs = timeoutSeconds * 1000 + services.limits.execDeadlineBufferMs;
    // Unknown request fields travel on to the sandbox; only the timeout is rewritten.
    const forwarded = JSON.stringify({ ...(body as object), timeout_seconds: timeoutSeconds });
    const answer = await services.sessions.whileBusy(key, deadlineMs, () =>
      forwardToSandbox(services, lease, {
        method: "POST",
        subPath: "/exec",
        headers: { "content-type": "application/json" },
        body: forwarded,
        timeoutMs: deadlineMs,
        buffer: true,
      }),
    );
    if (answer.status === 200) await meterExecution(services, key, tool, answer.body as Buffer);
    return toResponse(c, answer);
  });
}

async function meterExecution(
  services: GatewayServices,
  key: { workspace: string; sessionId: string },
  tool: string,
  body: Buffer,
): Promise<void> {
  let executionMs = 0;
  try {
    const reported = (JSON.parse(body.toString("utf8")) as { execution_time_ms?: unknown }).execution_time_ms;
    if (typeof reported === "number" && Number.isFinite(reported) && reported >= 0) executionMs = reported;
  } catch {
    // A body we cannot read is still returned to the client as it came; it just meters as 0.
  }
  services.metrics.execDuration.observe({ tool }, executionMs / 1000);
  await services.admission.chargeExec(key.workspace, executionMs);
  services.usage.record({
    workspace: key.workspace,
    sessionId: key.sessionId,
    kind: "exec",
    tool,
    quantity: executionMs,
  });
}
