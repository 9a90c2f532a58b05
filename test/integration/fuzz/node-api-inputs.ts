/**
 * Generators of hostile input for the node API fuzz suite: node routes with hostile pieces
 * spliced in, forged or broken signature headers, one-place alterations of a signed
 * request, and framed bodies broken in every way a wire can break them. Pure: nothing here
 * sends a request.
 */
import fc from "fast-check";
import { SIGNATURE_HEADERS } from "../../../src/roles/shared/node-signature.js";

/** Node API targets: real routes, their near misses and hostile spellings. */
export function nodeTarget(sandboxId: string): fc.Arbitrary<string> {
  const ids = fc.constantFrom(sandboxId, "00ff", "0".repeat(64), "0".repeat(65), "ZZ", "..", "%2e%2e", "");
  const tails = fc.constantFrom(
    "/usage",
    "/destroy",
    "/relay/health",
    "/relay/sessions/x/exec",
    "/relay/../../leases",
    "/relay",
    "/relay%2fhealth",
    "/freeze",
    "",
  );
  return fc.oneof(
    fc.constantFrom(
      "/node/v1/leases",
      "/node/v1/leases/",
      "/node/v1//leases",
      "/node/v1/leases?pool=default",
      "/node/v1",
      "/node/v2/leases",
      "/healthz/../node/v1/leases",
      "/NODE/V1/LEASES",
      "/",
      "*",
      "/metrics",
      "/healthz",
      "/readyz",
    ),
    fc.tuple(ids, tails).map(([id, tail]) => `/node/v1/sandboxes/${id}${tail}`),
  );
}

/** Signature headers as an attacker without the secret can make them. */
export function forgedSignatureHeaders(now: number): fc.Arbitrary<Record<string, string>> {
  const value = fc.oneof(
    fc.string({ maxLength: 80 }),
    fc.constantFrom(
      "",
      "v1=",
      "v2=",
      `v2=${"A".repeat(43)}`,
      "v2=====",
      "stream",
      "frames",
      "0",
      "-1",
      "NaN",
    ),
  );
  const timestamp = fc.oneof(
    fc.constant(String(now)),
    fc.integer({ min: -1e15, max: 1e15 }).map(String),
    fc.constantFrom("", "1e3", "0x10", " 1"),
  );
  return fc
    .record(
      {
        [SIGNATURE_HEADERS.timestamp]: timestamp,
        [SIGNATURE_HEADERS.nonce]: value,
        [SIGNATURE_HEADERS.body]: value,
        [SIGNATURE_HEADERS.signature]: value,
        [SIGNATURE_HEADERS.workspace]: value,
        [SIGNATURE_HEADERS.length]: value,
      },
      { requiredKeys: [] },
    )
    .map((headers) => {
      // Header values cannot carry control characters: such a case is not a request at all.
      const clean: Record<string, string> = {};
      for (const [name, text] of Object.entries(headers)) {
        clean[name] = text.replace(/[^\x20-\x7e]/g, "");
      }
      return clean;
    });
}

/** One place to alter in a signed request. */
export type Alteration =
  | { kind: "header"; name: string; value: string }
  | { kind: "drop-header"; name: string }
  | { kind: "method"; method: string }
  | { kind: "target"; suffix: string }
  | { kind: "body"; at: number }
  | { kind: "timestamp"; by: number }
  | { kind: "replay" };

export const alterations: fc.Arbitrary<Alteration> = fc.oneof(
  fc.record({
    kind: fc.constant("header" as const),
    name: fc.constantFrom(
      SIGNATURE_HEADERS.workspace,
      SIGNATURE_HEADERS.length,
      SIGNATURE_HEADERS.nonce,
      SIGNATURE_HEADERS.body,
      "content-type",
      "accept",
      "x-sandpool-max-file-bytes",
      "x-sandpool-timeout-ms",
    ),
    value: fc.constantFrom("team-b", "999999999", "1", "text/html", "*/*", "x"),
  }),
  fc.record({
    kind: fc.constant("drop-header" as const),
    name: fc.constantFrom(
      SIGNATURE_HEADERS.workspace,
      SIGNATURE_HEADERS.signature,
      SIGNATURE_HEADERS.timestamp,
      "x-sandpool-max-file-bytes",
      "content-type",
    ),
  }),
  fc.record({
    kind: fc.constant("method" as const),
    method: fc.constantFrom("GET", "PUT", "DELETE", "PATCH"),
  }),
  fc.record({ kind: fc.constant("target" as const), suffix: fc.constantFrom("?", "?x=1", "/", "%20") }),
  fc.record({ kind: fc.constant("body" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("timestamp" as const), by: fc.constantFrom(-1, 1, 60_000, -60_000) }),
  fc.constant({ kind: "replay" as const }),
);

/** How a framed body can be broken on its way. */
export type FrameBreak =
  | { kind: "flip"; at: number }
  | { kind: "cut"; at: number }
  | { kind: "append"; bytes: Buffer }
  | { kind: "drop-frame"; index: number }
  | { kind: "swap-frames" }
  | { kind: "huge-length" }
  | { kind: "garbage"; bytes: Buffer };

export const frameBreaks: fc.Arbitrary<FrameBreak> = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("cut" as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant("append" as const),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
  }),
  fc.record({ kind: fc.constant("drop-frame" as const), index: fc.nat({ max: 3 }) }),
  fc.constant({ kind: "swap-frames" as const }),
  fc.constant({ kind: "huge-length" as const }),
  fc.record({
    kind: fc.constant("garbage" as const),
    bytes: fc.uint8Array({ minLength: 0, maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
  }),
);

/** Frames of `wire` (each: 4-byte length, data, 32-byte MAC). */
export function splitFrames(wire: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  for (let at = 0; at + 4 <= wire.length; ) {
    const size = 4 + wire.readUInt32BE(at) + 32;
    frames.push(wire.subarray(at, at + size));
    at += size;
  }
  return frames;
}

/** `wire` broken as `broken` says. */
export function breakFrames(wire: Buffer, broken: FrameBreak): Buffer {
  const frames = splitFrames(wire);
  switch (broken.kind) {
    case "flip": {
      const out = Buffer.from(wire);
      const at = broken.at % out.length;
      out[at] = out[at]! ^ 0x20;
      return out;
    }
    case "cut":
      return wire.subarray(0, broken.at % wire.length);
    case "append":
      return Buffer.concat([wire, broken.bytes]);
    case "drop-frame":
      return Buffer.concat(frames.filter((_, index) => index !== broken.index % frames.length));
    case "swap-frames":
      return frames.length < 2
        ? wire.subarray(1)
        : Buffer.concat([frames[1]!, frames[0]!, ...frames.slice(2)]);
    case "huge-length": {
      const head = Buffer.alloc(4);
      head.writeUInt32BE(0xffffffff, 0);
      return Buffer.concat([head, wire.subarray(4)]);
    }
    case "garbage":
      return broken.bytes;
  }
}
