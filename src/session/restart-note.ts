/**
 * The first Execute after a files-only resume says in its stderr that the interpreter
 * started anew (docs/hibernate.md): the client would else find its variables gone without
 * a word. Only a whole JSON answer of the contract's shape is rewritten; anything else
 * (an error, an answer that does not parse) goes on as it came.
 */

import type { SandboxAnswer } from "../forward/sandbox-forwarder.js";
import { INTERPRETER_RESTARTED_NOTE } from "../hibernate/hibernate-sandbox.js";

export function withRestartNote(answer: SandboxAnswer): SandboxAnswer {
  if (answer.status !== 200 || !Buffer.isBuffer(answer.body)) return answer;
  let parsed: { result_block?: { content?: { stderr?: unknown } } };
  try {
    parsed = JSON.parse(answer.body.toString("utf8"));
  } catch {
    return answer;
  }
  const content = parsed.result_block?.content;
  if (!content || typeof content.stderr !== "string") return answer;
  content.stderr = INTERPRETER_RESTARTED_NOTE + content.stderr;
  const body = Buffer.from(JSON.stringify(parsed));
  const headers = { ...answer.headers };
  if (headers["content-length"] !== undefined) headers["content-length"] = String(body.length);
  return { ...answer, headers, body };
}
