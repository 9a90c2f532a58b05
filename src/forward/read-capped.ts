/**
 * Reads a sandbox's answer body into memory, never more than a byte cap. The cap is counted
 * on the bytes that arrive, not on any size the sandbox declares (Content-Length is the
 * sandbox's word), and at the first byte past it the stream is destroyed, so a sandbox that
 * answers without end costs the gateway the cap and a closed connection, nothing more.
 *
 * Read with listeners, not `for await`: an async iterator per answer (its promises, one per
 * chunk) was a measurable part of the gateway's CPU per Execute, whose answer is one chunk.
 */
import type { Readable } from "node:stream";

export interface CappedRead {
  /** The whole body; empty when it overflowed (nothing of an oversized answer is used). */
  bytes: Buffer;
  /** True when the body had more than `maxBytes`; what followed the cap was not read. */
  overflowed: boolean;
}

const ignore = () => undefined;

export function readCapped(body: Readable, maxBytes: number): Promise<CappedRead> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    const settle = () => {
      body.off("data", onData);
      body.off("end", onEnd);
      body.off("error", onError);
      body.off("close", onClose);
      // Decided: an error the stream still emits (undici's abort when destroyed past the
      // cap) is nobody's to hear, and unheard it would be an uncaught exception.
      body.on("error", ignore);
    };
    const onData = (chunk: Buffer | string) => {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      if (bytes.length > maxBytes - kept) {
        // Not joined: a caller has no use for a broken answer, so it costs no copy either.
        settle();
        body.destroy();
        resolve({ bytes: Buffer.alloc(0), overflowed: true });
        return;
      }
      chunks.push(bytes);
      kept += bytes.length;
    };
    const onEnd = () => {
      settle();
      resolve({ bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, kept), overflowed: false });
    };
    const onError = (error: Error) => {
      settle();
      reject(error);
    };
    // Closed before its end with no error of its own (destroyed by someone else): cut short.
    const onClose = () => {
      settle();
      reject(
        Object.assign(new Error("the answer ended before its last byte"), {
          code: "ERR_STREAM_PREMATURE_CLOSE",
        }),
      );
    };
    body.on("data", onData);
    body.on("end", onEnd);
    body.on("error", onError);
    body.on("close", onClose);
  });
}

/**
 * The whole body when every byte of it is already buffered (`declared` bytes, the length
 * undici holds the sandbox to): an Execute's answer most often came in the same read as its
 * headers, and taking it at once spares the listeners, a promise and a deadline timer. Else
 * undefined, and the body is left as it was, for `readCapped`.
 */
export function takeIfBuffered(body: Readable, declared: number): Buffer | undefined {
  if (body.readableLength !== declared || body.readableFlowing === true) return undefined;
  // An error undici may still report (the connection lost before the message's end) is
  // nobody's to hear: the answer is whole.
  body.on("error", ignore);
  const bytes = declared === 0 ? Buffer.alloc(0) : (body.read() as Buffer);
  body.resume(); // nothing more is read from it: it ends, and is released, on its own
  return bytes;
}
