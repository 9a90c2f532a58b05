/**
 * Streamed Execute for tests: sends the call with `Accept: text/event-stream` and reads the
 * server-sent events as they arrive, each stamped with the time it arrived.
 */
import { performance } from "node:perf_hooks";

export interface ReceivedEvent {
  event: string;
  data: string;
  /** Milliseconds since the request was sent. */
  atMs: number;
}

export interface StreamedAnswer {
  status: number;
  headers: Headers;
  events: ReceivedEvent[];
  /** The body as text when the answer was not an event stream (an error before it started). */
  text: string;
  /** Milliseconds from sending to the end of the body. */
  endedAtMs: number;
}

export async function streamExec(
  baseUrl: string,
  sessionId: string,
  payload: unknown,
  token?: string,
  /** Awaited as each event arrives, while the stream is still open. */
  onEvent?: (event: ReceivedEvent) => Promise<void> | void,
): Promise<StreamedAnswer> {
  const started = performance.now();
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "text/event-stream",
  };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${baseUrl}/sessions/${encodeURIComponent(sessionId)}/exec`, {
    method: "POST",
    headers,
    body: JSON.stringify(payload),
  });
  const events: ReceivedEvent[] = [];
  let text = "";
  let pending = "";
  const decoder = new TextDecoder();
  const isStream = (res.headers.get("content-type") ?? "").startsWith("text/event-stream");
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    const piece = decoder.decode(chunk, { stream: true });
    if (!isStream) {
      text += piece;
      continue;
    }
    pending += piece;
    let end = pending.indexOf("\n\n");
    while (end >= 0) {
      const block = pending.slice(0, end);
      pending = pending.slice(end + 2);
      const fields = Object.fromEntries(
        block
          .split("\n")
          .map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]),
      );
      const received = {
        event: fields.event ?? "message",
        data: fields.data ?? "",
        atMs: performance.now() - started,
      };
      events.push(received);
      await onEvent?.(received);
      end = pending.indexOf("\n\n");
    }
  }
  if (pending.length > 0)
    throw new Error(`the stream ended inside an event: ${JSON.stringify(pending.slice(0, 200))}`);
  return { status: res.status, headers: res.headers, events, text, endedAtMs: performance.now() - started };
}

/** The concatenated text of the deltas of one stream. */
export function streamedText(events: ReceivedEvent[], stream: "stdout" | "stderr"): string {
  return events
    .filter((e) => e.event === stream)
    .map((e) => (JSON.parse(e.data) as { text: string }).text)
    .join("");
}

/** An Execute answer without the fields that differ between two runs of the same code. */
export function comparable(answer: unknown): unknown {
  const copy = structuredClone(answer) as {
    tool_use_id?: string;
    execution_time_ms?: number;
    result_block: { tool_use_id?: string };
  };
  delete copy.tool_use_id;
  delete copy.execution_time_ms;
  delete copy.result_block.tool_use_id;
  return copy;
}
