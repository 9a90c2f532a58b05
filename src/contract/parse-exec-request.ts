/**
 * An Execute body checked as the contract asks: an unknown (or missing) tool kind is 400,
 * a known kind whose input is malformed is 422. Shared by the gateway and the sandbox.
 */
import { malformed, SandpoolError } from "./error-codes.js";
import { type ExecRequest, execRequest, issueProblems, isToolKind } from "./schemas.js";

export function parseExecRequest(body: unknown): ExecRequest {
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
