/**
 * The first Execute after a files-only resume says in its stderr that the interpreter
 * started anew (docs/hibernate.md): the client would else find its variables gone without
 * a word. Only a whole JSON answer of the contract's shape is rewritten; anything else
 * (an error, an answer that does not parse) goes on as it came. A streamed Execute carries
 * the note in its first stderr event and its result (exec-event-relay.ts, `stderrNote`).
 */

import type { SandboxAnswer } from "../forward/sandbox-forwarder.js";
import { prefixStderr } from "../forward/stderr-note.js";
import { INTERPRETER_RESTARTED_NOTE } from "../hibernate/hibernate-sandbox.js";

export function withRestartNote(answer: SandboxAnswer): SandboxAnswer {
  if (answer.status !== 200 || !Buffer.isBuffer(answer.body)) return answer;
  const noted = prefixStderr(answer.body.toString("utf8"), INTERPRETER_RESTARTED_NOTE);
  if (noted === undefined) return answer;
  const body = Buffer.from(noted);
  const headers = { ...answer.headers };
  if (headers["content-length"] !== undefined) headers["content-length"] = String(body.length);
  return { ...answer, headers, body };
}
