/** A sandbox's answer as a call's outcome, its bytes as they are. */
import { Readable } from "node:stream";
import type { SandboxAnswer } from "../forward/sandbox-forwarder.js";
import type { Outcome } from "../operations/handler.js";

/** A buffered answer is passed as bytes (written at once), a streamed one as a web stream with backpressure. */
export function answerOutcome(answer: SandboxAnswer): Outcome {
  if (answer.status === 204) return { kind: "empty", status: 204, headers: answer.headers };
  const body = Buffer.isBuffer(answer.body)
    ? (answer.body as Uint8Array<ArrayBuffer>)
    : (Readable.toWeb(answer.body) as unknown as ReadableStream<Uint8Array>);
  return { kind: "raw", status: answer.status, headers: answer.headers, body };
}
