/**
 * Reads a sandbox's answer body into memory, never more than a byte cap. The cap is counted
 * on the bytes that arrive, not on any size the sandbox declares (Content-Length is the
 * sandbox's word), and at the first byte past it the stream is destroyed, so a sandbox that
 * answers without end costs the gateway the cap and a closed connection, nothing more.
 */

export interface CappedRead {
  /** The whole body; empty when it overflowed (nothing of an oversized answer is used). */
  bytes: Buffer;
  /** True when the body had more than `maxBytes`; what followed the cap was not read. */
  overflowed: boolean;
}

export async function readCapped(
  body: AsyncIterable<Uint8Array | string>,
  maxBytes: number,
): Promise<CappedRead> {
  const chunks: Buffer[] = [];
  let kept = 0;
  // Leaving the loop early (break) destroys the stream: undici then drops the connection.
  for await (const chunk of body) {
    const bytes =
      typeof chunk === "string"
        ? Buffer.from(chunk)
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (bytes.length > maxBytes - kept) {
      // Not joined: a caller has no use for a broken answer, so it costs no copy either.
      return { bytes: Buffer.alloc(0), overflowed: true };
    }
    chunks.push(bytes);
    kept += bytes.length;
  }
  return { bytes: Buffer.concat(chunks, kept), overflowed: false };
}
