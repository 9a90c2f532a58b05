/**
 * Streamed Execute (an extension ahead of the contract's planned addition): a call sent with
 * `Accept: text/event-stream` is answered with server-sent events as the output happens:
 *
 *   event: stdout            event: stderr            event: result
 *   data: {"text":"..."}     data: {"text":"..."}     data: <the whole Execute answer>
 *
 * then the stream ends. The deltas are the output under the same per-stream cap as the
 * answer, ending with the same truncation marker; the `result` event's data is exactly the
 * JSON a call without the header gets. A failure after the stream started (the status is
 * already 200) is one `event: error` whose data is the contract's Error body instead.
 * Every event is one `event:` line and one `data:` line of JSON (no line breaks inside).
 */

export const EVENT_STREAM_TYPE = "text/event-stream";

export type ExecEventName = "stdout" | "stderr" | "result" | "error";

/** True when the client's Accept header asks for the event stream. */
export function wantsEventStream(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(",").some((part) => part.split(";")[0]!.trim().toLowerCase() === EVENT_STREAM_TYPE);
}

/** One event; `data` must be JSON text (JSON.stringify never writes a line break). */
export function formatEvent(name: ExecEventName, data: string): string {
  return `event: ${name}\ndata: ${data}\n\n`;
}

export function outputEvent(stream: "stdout" | "stderr", text: string): string {
  return formatEvent(stream, JSON.stringify({ text }));
}

export const EVENT_STREAM_HEADERS = {
  "content-type": `${EVENT_STREAM_TYPE}; charset=utf-8`,
  "cache-control": "no-cache",
  // Proxies such as nginx would otherwise hold the events back until the call ends.
  "x-accel-buffering": "no",
};
