/**
 * A streamed body between edge and node, authenticated as it flows: the bytes are cut into
 * frames, each carrying an HMAC-SHA256 chained to the one before it and seeded with the
 * signature of the message's head (node-signature.ts), so no frame can be altered, dropped,
 * reordered, replayed from another message or added. A frame with no data ends the body:
 * a body is whole only when that signed end arrives, so a cut stream is never taken for a
 * complete one.
 *
 *   frame = length (uint32, big endian, at most MAX_FRAME_BYTES) | data | MAC (32 bytes)
 *   MAC_i = HMAC(key, MAC_{i-1} | length | data),  MAC_0 = the head's signature
 *
 * The reader (FrameVerifier) holds at most one frame and passes its data on only once its
 * MAC verifies: nothing unverified is ever handed to the next hop, whether that is a sandbox
 * (an upload) or an edge's client (a download, an Execute's event stream). A bad frame, a
 * frame too large, bytes after the end or an end that never comes fail the stream with the
 * error the owner chose. This costs one HMAC per frame and 36 bytes; a frame is whatever
 * chunk arrived (at most 64 KiB), so an event stream's events still pass one by one.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";

export const MAX_FRAME_BYTES = 64 * 1024;
const LENGTH_BYTES = 4;
const MAC_BYTES = 32;
const END = Buffer.alloc(0);

/** The key a message's frames are made with and the head signature that seeds their chain. */
export interface FrameKey {
  key: Buffer;
  seed: Buffer;
}

class FrameChain {
  private previous: Buffer;

  constructor(private readonly frames: FrameKey) {
    this.previous = frames.seed;
  }

  /** The MAC of the next frame (`length` is its 4-byte head); the chain moves on. */
  next(length: Buffer, data: Buffer): Buffer {
    this.previous = createHmac("sha256", this.frames.key)
      .update(this.previous)
      .update(length)
      .update(data)
      .digest();
    return this.previous;
  }
}

function lengthOf(bytes: number): Buffer {
  const head = Buffer.allocUnsafe(LENGTH_BYTES);
  head.writeUInt32BE(bytes, 0);
  return head;
}

/** Turns a body into frames (the end frame on its end). */
export class FrameSigner extends Transform {
  private readonly chain: FrameChain;

  constructor(frames: FrameKey) {
    super();
    this.chain = new FrameChain(frames);
  }

  override _transform(chunk: Buffer | string, _encoding: BufferEncoding, done: TransformCallback): void {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    for (let at = 0; at < bytes.length; at += MAX_FRAME_BYTES) {
      this.push(this.frame(bytes.subarray(at, at + MAX_FRAME_BYTES)));
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    this.push(this.frame(END));
    done();
  }

  private frame(data: Buffer): Buffer {
    const length = lengthOf(data.length);
    return Buffer.concat([length, data, this.chain.next(length, data)]);
  }
}

/** A whole body as frames, at once (a small answer written in one go). */
export function framedBody(frames: FrameKey, body: Buffer): Buffer {
  const signer = new FrameChain(frames);
  const parts: Buffer[] = [];
  for (let at = 0; at < body.length; at += MAX_FRAME_BYTES) {
    const data = body.subarray(at, at + MAX_FRAME_BYTES);
    const length = lengthOf(data.length);
    parts.push(length, data, signer.next(length, data));
  }
  const end = lengthOf(0);
  parts.push(end, signer.next(end, END));
  return Buffer.concat(parts);
}

export interface FrameVerifierOptions {
  /** The body's signed length, when it has one: any other length fails. */
  length?: number;
  /** The error the stream fails with, given what was wrong. */
  failure: (reason: string) => Error;
}

/** Reads frames, passing on each one's data once its MAC verifies. */
export class FrameVerifier extends Transform {
  private readonly chain: FrameChain;
  private readonly held: Buffer[] = [];
  private heldBytes = 0;
  private received = 0;
  private ended = false;
  /** The data length of the frame being held, once its head has come. */
  private frameData: number | undefined;

  constructor(
    frames: FrameKey,
    private readonly options: FrameVerifierOptions,
  ) {
    super();
    this.chain = new FrameChain(frames);
  }

  override _transform(chunk: Buffer | string, _encoding: BufferEncoding, done: TransformCallback): void {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    if (this.ended) {
      if (bytes.length > 0) done(this.options.failure("bytes after the signed end"));
      else done();
      return;
    }
    this.held.push(bytes);
    this.heldBytes += bytes.length;
    try {
      this.takeFrames();
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    done(this.ended ? undefined : this.options.failure("the body ended before its signed end"));
  }

  private takeFrames(): void {
    while (!this.ended && this.heldBytes >= LENGTH_BYTES) {
      // Read once per frame: a frame arriving in many small chunks is not copied again each time.
      this.frameData ??= this.lengthHead();
      const dataBytes = this.frameData;
      if (dataBytes > MAX_FRAME_BYTES) throw this.options.failure("a frame larger than frames are");
      const frameBytes = LENGTH_BYTES + dataBytes + MAC_BYTES;
      if (this.heldBytes < frameBytes) return;
      this.frameData = undefined;
      const frame = this.takeBytes(frameBytes);
      const data = frame.subarray(LENGTH_BYTES, LENGTH_BYTES + dataBytes);
      const expected = this.chain.next(frame.subarray(0, LENGTH_BYTES), data);
      if (!timingSafeEqual(expected, frame.subarray(LENGTH_BYTES + dataBytes))) {
        throw this.options.failure("a frame whose MAC does not verify");
      }
      if (dataBytes === 0) {
        this.ended = true;
        if (this.heldBytes > 0) throw this.options.failure("bytes after the signed end");
        if (this.options.length !== undefined && this.received !== this.options.length) {
          throw this.options.failure("a body shorter than its signed length");
        }
        return;
      }
      this.received += dataBytes;
      if (this.options.length !== undefined && this.received > this.options.length) {
        throw this.options.failure("a body longer than its signed length");
      }
      this.push(data);
    }
  }

  /** The length in the first LENGTH_BYTES held, without taking them. */
  private lengthHead(): number {
    const head = Buffer.allocUnsafe(LENGTH_BYTES);
    let copied = 0;
    for (const chunk of this.held) {
      copied += chunk.copy(head, copied, 0, Math.min(chunk.length, LENGTH_BYTES - copied));
      if (copied === LENGTH_BYTES) break;
    }
    return head.readUInt32BE(0);
  }

  private takeBytes(bytes: number): Buffer {
    const first = this.held[0]!;
    if (first.length === bytes) {
      this.held.shift();
    } else if (first.length > bytes) {
      this.held[0] = first.subarray(bytes);
    } else {
      const joined = Buffer.concat(this.held, this.heldBytes);
      this.held.length = 0;
      if (joined.length > bytes) this.held.push(joined.subarray(bytes));
      this.heldBytes -= bytes;
      return joined.subarray(0, bytes);
    }
    this.heldBytes -= bytes;
    return first.subarray(0, bytes);
  }
}
