/**
 * An Execute body checked as the contract asks: an unknown (or missing) tool kind is 400,
 * a known kind whose input is malformed is 422. Shared by the gateway and the sandbox.
 */
import { malformed, SandpoolError } from "./error-codes.js";
import { type ExecRequest, execRequest, issueProblems, isToolKind } from "./schemas.js";

export function parseExecRequest(body: unknown): ExecRequest {
  if (isPlainCodeOrCommand(body)) return body;
  const tool = (body as { tool?: unknown } | null)?.tool;
  if (!isToolKind(tool))
    throw new SandpoolError("tool.unknown", `unknown tool kind: ${JSON.stringify(tool)}`);
  const parsed = execRequest.safeParse(body);
  if (!parsed.success) throw malformed(issueProblems(parsed.error));
  return parsed.data;
}

/**
 * An Execute body admitted as it came: checked by `parseExecRequest`, returned unchanged,
 * since unknown request fields travel on to the sandbox (only the timeout is rewritten).
 */
export function admitExecBody(body: unknown): ExecRequest {
  parseExecRequest(body);
  return body as ExecRequest;
}

/**
 * Whether a body is valid in the shape nearly every Execute has: Python code or a bash
 * command as a non-empty string, `timeout_seconds` and `tool_use_id` absent, null or of
 * their type, any other field. Such a body needs no walk of the schema (whose parse copies
 * every object it checks: a tenth of the gateway's own time per Execute). Anything else is
 * judged by the schema; what this accepts, the schema accepts too (a property test holds
 * the two together).
 */
export function isPlainCodeOrCommand(body: unknown): body is ExecRequest {
  if (!isObject(body)) return false;
  const { tool, input, timeout_seconds: timeout, tool_use_id: toolUseId } = body;
  if (!isObject(input)) return false;
  const text =
    tool === "code_execution" ? input.code : tool === "bash_code_execution" ? input.command : undefined;
  return (
    typeof text === "string" &&
    text.length > 0 &&
    (timeout == null || (Number.isSafeInteger(timeout) && (timeout as number) >= 1)) &&
    (toolUseId == null || typeof toolUseId === "string")
  );
}

/** An object as the schema's object types take it: not null, not an array. */
function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
