/**
 * The body of a node API request, read only once its head's signature verified
 * (node-api.ts): a buffered body (JSON of a lease, an Execute) is read whole, at most
 * `maxBytes` and within `timeoutMs`, and refused unless its SHA-256 is the signed one; a
 * framed body (an upload) is handed on as a stream that yields each frame's bytes once
 * its MAC verifies (mac-frames.ts) and fails on anything else.
 */
import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { SandpoolError } from "../../contract/error-codes.js";
import { readCapped } from "../../forward/read-capped.js";
import { type FrameKey, FrameVerifier } from "../shared/mac-frames.js";
import { bodyMatches } from "../shared/node-signature.js";

export type BufferedBody =
  | { ok: true; bytes: Buffer }
  | { ok: false; refused: "body_mismatch" }
  | { ok: false; failure: SandpoolError };

export async function readSignedBody(
  req: IncomingMessage,
  signedDigest: string,
  limits: { maxBytes: number; timeoutMs: number },
): Promise<BufferedBody> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limits.maxBytes) {
    return {
      ok: false,
      failure: new SandpoolError("request.too_large", "the body is larger than the node reads"),
    };
  }
  const deadline = setTimeout(
    () => req.destroy(new SandpoolError("request.malformed", "the body took too long to arrive")),
    limits.timeoutMs,
  );
  try {
    const read = await readCapped(req, limits.maxBytes);
    if (read.overflowed) {
      return {
        ok: false,
        failure: new SandpoolError("request.too_large", "the body is larger than the node reads"),
      };
    }
    return bodyMatches(signedDigest, read.bytes)
      ? { ok: true, bytes: read.bytes }
      : { ok: false, refused: "body_mismatch" };
  } finally {
    clearTimeout(deadline);
  }
}

/**
 * The verified bytes of a framed body, on their way to a sandbox. `length` is its signed
 * length, when the edge knew it; past `maxBytes` (a workspace's file cap and the multipart
 * framing) it stops with file.too_large, whatever the sandbox would say.
 *
 * A failure (a frame that does not verify, the cap passed, the edge gone) ends the stream
 * where it stands rather than failing it, and is kept in `failure`, which the relay answers
 * instead of the sandbox's answer: the sandbox sees a body cut short (a multipart without
 * its end, which it refuses and stores nothing of) instead of an aborted request. Only
 * verified bytes ever reach it.
 */
export class VerifiedUpload extends Readable {
  failure: SandpoolError | undefined;
  private readonly verifier: FrameVerifier;
  private seen = 0;

  constructor(
    private readonly req: IncomingMessage,
    frames: FrameKey,
    private readonly options: { length?: number; maxBytes?: number; maxFileBytes?: number },
  ) {
    super();
    this.verifier = new FrameVerifier(frames, {
      length: options.length,
      failure: (reason) =>
        new SandpoolError("request.malformed", `the body's frames were not the edge's: ${reason}`),
    });
    // Not stream.pipeline: it would destroy the request, and with it the socket the
    // refusal is still to be written on.
    req.on("error", () => this.stop(new SandpoolError("request.malformed", "the edge's upload broke off")));
    this.verifier.on("error", (error) => this.stop(error as SandpoolError));
    this.verifier.on("data", (chunk: Buffer) => this.passOn(chunk));
    this.verifier.on("end", () => this.push(null));
    this.verifier.pause();
    req.pipe(this.verifier);
  }

  override _read(): void {
    if (!this.failure) this.verifier.resume();
  }

  private passOn(chunk: Buffer): void {
    if (this.failure) return;
    this.seen += chunk.length;
    if (this.options.maxBytes !== undefined && this.seen > this.options.maxBytes) {
      const cap = this.options.maxFileBytes ?? this.options.maxBytes;
      this.stop(new SandpoolError("file.too_large", `the file is larger than the ${cap}-byte cap`));
      return;
    }
    if (!this.push(chunk)) this.verifier.pause();
  }

  private stop(failure: SandpoolError): void {
    if (this.failure) return;
    this.failure = failure;
    this.req.unpipe(this.verifier);
    this.verifier.pause();
    this.push(null);
  }
}
