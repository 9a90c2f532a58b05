import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  type FrameKey,
  FrameSigner,
  FrameVerifier,
  framedBody,
  MAX_FRAME_BYTES,
} from "../../../../src/roles/shared/mac-frames.js";

const frames: FrameKey = { key: Buffer.from("k".repeat(32)), seed: randomBytes(32) };

async function signed(chunks: Buffer[], key = frames): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const chunk of Readable.from(chunks).pipe(new FrameSigner(key))) out.push(chunk as Buffer);
  return Buffer.concat(out);
}

/** Feeds `wire` in pieces of `piece` bytes; what was passed on, and the failure if any. */
async function verified(
  wire: Buffer,
  options: { piece?: number; length?: number; key?: FrameKey } = {},
): Promise<{ data: Buffer; error?: string }> {
  const piece = options.piece ?? wire.length;
  const pieces: Buffer[] = [];
  for (let at = 0; at < wire.length; at += Math.max(1, piece)) pieces.push(wire.subarray(at, at + piece));
  const verifier = new FrameVerifier(options.key ?? frames, {
    length: options.length,
    failure: (reason) => new Error(reason),
  });
  const data: Buffer[] = [];
  verifier.on("data", (chunk: Buffer) => data.push(chunk));
  const ended = new Promise<string | undefined>((resolve) => {
    verifier.on("end", () => resolve(undefined));
    verifier.on("error", (error) => resolve(error.message));
  });
  for (const bytes of pieces) {
    if (verifier.destroyed) break;
    verifier.write(bytes);
  }
  if (!verifier.destroyed) verifier.end();
  const error = await ended;
  return { data: Buffer.concat(data), error };
}

describe("MAC frames", () => {
  const body = [Buffer.from("first "), randomBytes(MAX_FRAME_BYTES * 2 + 17), Buffer.from(" last")];
  const whole = Buffer.concat(body);

  it("carries a body whole, however the wire cuts it, streamed or framed at once", async () => {
    const wire = await signed(body);
    for (const piece of [1, 7, 4096, wire.length]) {
      const out = await verified(wire, { piece, length: whole.length });
      expect(out.error, `pieces of ${piece}`).toBeUndefined();
      expect(out.data.equals(whole)).toBe(true);
    }
    const once = await verified(framedBody(frames, whole), { length: whole.length });
    expect(once.error).toBeUndefined();
    expect(once.data.equals(whole)).toBe(true);
    expect((await verified(framedBody(frames, Buffer.alloc(0)), { length: 0 })).error).toBeUndefined();
  });

  it("passes on nothing of an altered frame, wherever the byte is", async () => {
    const wire = await signed([Buffer.from("a".repeat(100)), Buffer.from("b".repeat(100))]);
    const firstFrame = 4 + 100 + 32;
    for (const at of [0, 3, 4, 50, 103, 104, 135, firstFrame + 10, wire.length - 1]) {
      const tampered = Buffer.from(wire);
      tampered[at] = tampered[at]! ^ 0x01;
      const result = await verified(tampered);
      expect(result.error, `byte ${at}`).toBeDefined();
      // Only frames before the altered one were passed on.
      const passed =
        at < firstFrame ? "" : at < 2 * firstFrame ? "a".repeat(100) : "a".repeat(100) + "b".repeat(100);
      expect(result.data.toString(), `byte ${at}`).toBe(passed);
    }
  });

  it("fails a cut stream, dropped or reordered frames, bytes after the end and another message's frames", async () => {
    const one = Buffer.from("x".repeat(10));
    const two = Buffer.from("y".repeat(10));
    const wire = await signed([one, two]);
    const frame = 4 + 10 + 32;
    const first = wire.subarray(0, frame);
    const second = wire.subarray(frame, 2 * frame);
    const end = wire.subarray(2 * frame);
    expect((await verified(Buffer.concat([first, second]))).error).toMatch(/ended before its signed end/);
    expect((await verified(Buffer.concat([first, end]))).error).toMatch(/MAC/);
    expect((await verified(Buffer.concat([second, first, end]))).error).toMatch(/MAC/);
    expect((await verified(Buffer.concat([wire, Buffer.from("more")]))).error).toMatch(
      /after the signed end/,
    );
    const otherSeed = { ...frames, seed: randomBytes(32) };
    expect((await verified(wire, { key: otherSeed })).error).toMatch(/MAC/);
    expect((await verified(wire, { length: 19 })).error).toMatch(/longer than its signed length/);
    expect((await verified(wire, { length: 21 })).error).toMatch(/shorter than its signed length/);
  });

  it("refuses a frame longer than frames are before holding it", async () => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(MAX_FRAME_BYTES + 1, 0);
    const result = await verified(Buffer.concat([head, Buffer.alloc(10)]));
    expect(result.error).toMatch(/larger than frames are/);
  });
});
