/**
 * The sandbox server's streamed Execute (src/contract/exec-events.ts): output events as the
 * tool's capped collectors keep bytes, then the result event. What is queued for a slow
 * reader is bounded by the per-stream output cap, which the deltas obey like the answer.
 */
import { StringDecoder } from "node:string_decoder";
import type { Logger } from "pino";
import { errorBody, SandpoolError } from "../../contract/error-codes.js";
import { EVENT_STREAM_HEADERS, formatEvent, outputEvent } from "../../contract/exec-events.js";
import type { ExecResponse } from "../../contract/schemas.js";
import type { OutputListener } from "../tools/capped-output.js";

export function streamedExecResponse(
  run: (onOutput: OutputListener) => Promise<ExecResponse>,
  log: Logger,
): Response {
  const encoder = new TextEncoder();
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        if (!open) return; // the client went away: the call still runs to its end
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          open = false;
        }
      };
      // A chunk may end inside a UTF-8 character: each stream decodes its own bytes.
      const decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
      const onOutput: OutputListener = (stream, chunk) => {
        const text = decoders[stream].write(chunk);
        if (text.length > 0) send(outputEvent(stream, text));
      };
      run(onOutput)
        .then(
          (answer) => {
            for (const stream of ["stdout", "stderr"] as const) {
              const rest = decoders[stream].end();
              if (rest.length > 0) send(outputEvent(stream, rest));
            }
            send(formatEvent("result", JSON.stringify(answer)));
          },
          (error: unknown) => {
            if (!(error instanceof SandpoolError)) log.error({ err: error }, "a streamed call failed");
            const failure =
              error instanceof SandpoolError
                ? error.toBody()
                : errorBody("server.internal", "internal error");
            send(formatEvent("error", JSON.stringify(failure)));
          },
        )
        .finally(() => {
          if (!open) return;
          open = false;
          try {
            controller.close();
          } catch {
            // already cancelled by the reader
          }
        });
    },
    cancel() {
      open = false;
    },
  });
  return new Response(body, { status: 200, headers: EVENT_STREAM_HEADERS });
}
