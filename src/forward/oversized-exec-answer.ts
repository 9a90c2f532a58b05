/**
 * The Execute answer the gateway gives when a sandbox's answer is larger than it reads: a
 * 200 with a valid result, not an error status, because the contract reports failures in
 * the payload and Otari turns any non-2xx into a 502 (the session and its state survive).
 * A sound sandbox never gets here (it caps each stream near 1 MiB); one that does is buggy
 * or hostile, so nothing of its answer is used: the tool and tool_use_id come from the
 * request the gateway itself forwarded.
 */
import { execResponse, generateToolUseId } from "../contract/result-block.js";
import { isToolKind } from "../contract/schemas.js";

/** Return code of the replaced result: the program's own is in the part that was dropped. */
export const OVERSIZED_RETURN_CODE = 1;

export function oversizedExecAnswer(
  forwardedBody: unknown,
  limitBytes: number,
  elapsedMs: number,
): { status: 200; headers: Record<string, string>; body: Buffer } {
  const request = parseRequest(forwardedBody);
  const tool = isToolKind(request.tool) ? request.tool : "code_execution";
  const toolUseId = typeof request.tool_use_id === "string" ? request.tool_use_id : generateToolUseId();
  const stderr =
    `[output truncated: the sandbox's answer was larger than the gateway's limit of ${limitBytes} bytes; ` +
    "none of it was kept, so stdout, stderr and the return code of this call are unknown]\n";
  const response = execResponse(
    tool,
    toolUseId,
    { stdout: "", stderr, return_code: OVERSIZED_RETURN_CODE },
    elapsedMs,
  );
  const body = Buffer.from(JSON.stringify(response));
  return {
    status: 200,
    headers: { "content-type": "application/json", "content-length": String(body.length) },
    body,
  };
}

function parseRequest(body: unknown): { tool?: unknown; tool_use_id?: unknown } {
  if (typeof body !== "string" && !Buffer.isBuffer(body)) return {};
  try {
    const parsed: unknown = JSON.parse(body.toString());
    return typeof parsed === "object" && parsed !== null ? parsed : {};
  } catch {
    return {};
  }
}
