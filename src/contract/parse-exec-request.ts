/**
 * An Execute body checked as the contract asks: an unknown (or missing) tool kind is 400,
 * a known kind whose input is malformed is 422. Shared by the gateway and the sandbox.
 */
import { suggest } from "./did-you-mean.js";
import { malformed, SandpoolError } from "./error-codes.js";
import { type ExecRequest, execRequest, issueProblems, isToolKind, toolKinds } from "./schemas.js";

export function parseExecRequest(body: unknown): ExecRequest {
  if (isPlainCodeOrCommand(body)) return body;
  const tool = (body as { tool?: unknown } | null)?.tool;
  if (!isToolKind(tool)) throw new SandpoolError("tool.unknown", unknownToolMessage(tool));
  const parsed = execRequest.safeParse(body);
  if (!parsed.success) throw malformed(issueProblems(parsed.error));
  return parsed.data;
}

/** Names the tools a body may ask for, and the one it most likely meant. */
export function unknownToolMessage(tool: unknown): string {
  const valid = `the tools are ${toolKinds.join(", ")}`;
  if (tool === undefined) return `the body names no tool: ${valid}`;
  const meant = typeof tool === "string" ? meantTool(tool) : undefined;
  const hint = meant === undefined ? "" : ` (did you mean "${meant}"?)`;
  return `unknown tool kind: ${JSON.stringify(tool)}${hint}; ${valid}`;
}

/**
 * Names clients send for a tool by habit: the client-side tools' names in the model APIs
 * (`bash`, the text editor's `str_replace_based_edit_tool`), or a language.
 */
const habitualNames: Readonly<Record<string, (typeof toolKinds)[number]>> = {
  python: "code_execution",
  shell: "bash_code_execution",
  str_replace_editor: "text_editor_code_execution",
  str_replace_based_edit_tool: "text_editor_code_execution",
};

function meantTool(tool: string): string | undefined {
  const name = tool.trim().toLowerCase();
  if (Object.hasOwn(habitualNames, name)) return habitualNames[name];
  // `bash` for bash_code_execution, `text_editor` for text_editor_code_execution.
  const prefixed = toolKinds.find((kind) => name.length > 0 && kind.startsWith(`${name}_`));
  return prefixed ?? suggest(tool, toolKinds);
}

/**
 * An Execute body admitted as it came: checked by `parseExecRequest`, returned unchanged,
 * since unknown request fields travel on to the sandbox (only the timeout is rewritten).
 */
export function parseExecBody(body: unknown): ExecRequest {
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
