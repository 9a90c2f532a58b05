/**
 * A note the gateway puts before a call's stderr (the interpreter restarted after a
 * files-only resume, docs/hibernate.md), in an Execute answer's JSON: the buffered answer,
 * or a streamed call's result event, whose stderr event for the note goes first.
 */

/** `answer` (an Execute answer's JSON text) with `note` before its stderr; undefined when it is not of that shape. */
export function prefixStderr(answer: string, note: string): string | undefined {
  let parsed: { result_block?: { content?: { stderr?: unknown } } };
  try {
    parsed = JSON.parse(answer);
  } catch {
    return undefined;
  }
  const content = parsed?.result_block?.content;
  if (!content || typeof content.stderr !== "string") return undefined;
  content.stderr = note + content.stderr;
  return JSON.stringify(parsed);
}
