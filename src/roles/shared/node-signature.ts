/**
 * Edge <-> node authentication with shared secrets (HMAC-SHA256), both ways, over all that
 * either side acts on.
 *
 * Requests. An edge signs every request's head: the target node id, method, path and query,
 * a timestamp, a nonce, the values of SIGNED_REQUEST_HEADERS (content type, the calling
 * workspace, the workspace's limits, the deadline...) and what stands for its body: the
 * SHA-256 of a buffered body, or FRAMED_BODY for a streamed one (an upload: its digest is
 * unknown until its end, so it travels as MAC frames chained from this signature,
 * mac-frames.ts). The node checks the head from the headers alone, before it reads a byte
 * of the body, only within a clock window and only once (the nonce is remembered for that
 * window), under any of its secrets: whoever does not hold one gets a 401 with nothing read.
 * Only then is a buffered body read (bounded) and held to its signed digest, or a framed one
 * passed on frame by frame as each verifies.
 *
 * Answers. The node signs its answer's head: the request's nonce, the status and the values
 * of SIGNED_ANSWER_HEADERS (type, disposition, the body's length, the node's error code...),
 * and sends every body as MAC frames chained from that signature. The edge checks the head,
 * then takes each frame's bytes only once they verify and the body's end only from its
 * signed end frame: whoever sits between edge and node, or answers in a node's place (its
 * URL rewritten in Redis), can alter nothing an edge uses, only cut the stream, which fails.
 *
 * Rotation: the first secret signs, every secret listed verifies. Add the new one second
 * everywhere, then move it first, then drop the old one; no request is refused meanwhile.
 * The frames of a message are made with the secret its head was signed with.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { MAX_FILE_BYTES_HEADER } from "../../contract/headers.js";
import type { FrameKey } from "./mac-frames.js";

export const SIGNATURE_HEADERS = {
  timestamp: "x-sandpool-node-timestamp",
  nonce: "x-sandpool-node-nonce",
  body: "x-sandpool-node-body",
  signature: "x-sandpool-node-signature",
  answer: "x-sandpool-node-answer",
  /** The workspace the call is made for: a lease binds its sandbox to it, a relay must match. */
  workspace: "x-sandpool-node-workspace",
  /** A framed body's length when known (an upload's Content-Length, an answer's). */
  length: "x-sandpool-node-length",
} as const;

/** A node's refusal of a call (a SandpoolError): its code, so the edge answers as on one host. */
export const NODE_ERROR_HEADER = "x-sandpool-node-error";
/** The edge's deadline for the sandbox's answer headers, forwarded with a relay. */
export const NODE_TIMEOUT_HEADER = "x-sandpool-timeout-ms";

/** What an edge's request says, besides its path, that the node acts on: all of it signed. */
export const SIGNED_REQUEST_HEADERS = [
  "content-type",
  "accept",
  NODE_TIMEOUT_HEADER,
  SIGNATURE_HEADERS.workspace,
  SIGNATURE_HEADERS.length,
  MAX_FILE_BYTES_HEADER,
] as const;

/** What a node's answer says, besides its status and body, that an edge acts on. */
export const SIGNED_ANSWER_HEADERS = [
  "content-type",
  "content-disposition",
  "retry-after",
  NODE_ERROR_HEADER,
  SIGNATURE_HEADERS.length,
] as const;

/** A body sent as MAC frames (a stream: its bytes are not known when the head is signed). */
export const FRAMED_BODY = "frames";
const VERSION = "v2";

export type HeaderLookup = (name: string) => string | undefined;

export interface SignedRequest {
  /** The node the request is for: a request captured for one node is refused by another. */
  nodeId: string;
  method: string;
  /** Path and query as sent. */
  target: string;
  /** The signed headers' values as sent (SIGNED_REQUEST_HEADERS; absent ones sign as empty). */
  headers?: Readonly<Record<string, string | undefined>>;
  /** The body's bytes, or FRAMED_BODY for a stream; absent for no body. */
  body?: string | Buffer | typeof FRAMED_BODY;
}

export interface SignedHead {
  /** The authentication headers to send with the request. */
  headers: Record<string, string>;
  nonce: string;
  /** For a framed body: the frames' key, chained from this signature. */
  frames: FrameKey;
}

export type SignatureRefusal = "missing" | "bad_signature" | "clock" | "replay" | "body_mismatch";

export class NodeSecrets {
  private readonly keys: Buffer[];

  constructor(secrets: readonly string[]) {
    if (secrets.length === 0) throw new Error("at least one node secret is needed");
    this.keys = secrets.map((secret) => Buffer.from(secret, "utf8"));
  }

  /** The headers that authenticate `request`, signed with the first secret. */
  sign(request: SignedRequest, now = Date.now()): SignedHead {
    const timestamp = String(now);
    const nonce = randomBytes(16).toString("base64url");
    const body = bodyDigest(request.body);
    const key = this.keys[0]!;
    const lookup: HeaderLookup = (name) => request.headers?.[name];
    const mac = this.mac(key, requestText(request, lookup, timestamp, nonce, body));
    return {
      headers: {
        [SIGNATURE_HEADERS.timestamp]: timestamp,
        [SIGNATURE_HEADERS.nonce]: nonce,
        [SIGNATURE_HEADERS.body]: body,
        [SIGNATURE_HEADERS.signature]: `${VERSION}=${mac.toString("base64url")}`,
      },
      nonce,
      frames: { key, seed: mac },
    };
  }

  /** The key among the secrets that made `signature` (`v2=...`) over `text`, and its MAC. */
  keyFor(text: string, signature: string | undefined): FrameKey | undefined {
    if (!signature?.startsWith(`${VERSION}=`)) return undefined;
    const given = Buffer.from(signature.slice(VERSION.length + 1), "base64url");
    let found: FrameKey | undefined;
    // Every key is tried, found or not: the time taken says nothing about which one matched.
    for (const key of this.keys) {
      const expected = this.mac(key, text);
      if (expected.length === given.length && timingSafeEqual(expected, given) && !found) {
        found = { key, seed: expected };
      }
    }
    return found;
  }

  /** The node's signature over an answer's head: the request's nonce, the status and headers. */
  signAnswer(nonce: string, status: number, headers: HeaderLookup): { header: string; frames: FrameKey } {
    const key = this.keys[0]!;
    const mac = this.mac(key, answerText(nonce, status, headers));
    return { header: `${VERSION}=${mac.toString("base64url")}`, frames: { key, seed: mac } };
  }

  /** The frames' key of an answer whose head the node signed with one of the secrets, else undefined. */
  verifyAnswer(nonce: string, status: number, headers: HeaderLookup): FrameKey | undefined {
    return this.keyFor(answerText(nonce, status, headers), headers(SIGNATURE_HEADERS.answer));
  }

  private mac(key: Buffer, text: string): Buffer {
    return createHmac("sha256", key).update(text).digest();
  }
}

export type Verdict =
  | {
      ok: true;
      nonce: string;
      /** The signed body digest (check the bytes with bodyMatches), or FRAMED_BODY. */
      body: string;
      frames: FrameKey;
    }
  | { ok: false; refused: SignatureRefusal };

/** What the node checks on each request's head; nonces are remembered for the clock window. */
export class RequestVerifier {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly secrets: NodeSecrets,
    private readonly options: { nodeId: string; clockWindowMs: number; maxRemembered?: number },
  ) {}

  /**
   * Checks a request to this node from its headers alone (no body byte is needed): the
   * signature over its head, the clock and the nonce. Returns the nonce (to sign the answer
   * with), the signed body digest and the frames' key, or the reason for refusing it.
   */
  verify(request: { method: string; target: string }, headers: HeaderLookup, now = Date.now()): Verdict {
    const timestamp = headers(SIGNATURE_HEADERS.timestamp);
    const nonce = headers(SIGNATURE_HEADERS.nonce);
    const body = headers(SIGNATURE_HEADERS.body);
    const signature = headers(SIGNATURE_HEADERS.signature);
    if (!timestamp || !nonce || !body || !signature?.startsWith(`${VERSION}=`)) {
      return { ok: false, refused: "missing" };
    }
    const text = requestText({ ...request, nodeId: this.options.nodeId }, headers, timestamp, nonce, body);
    const frames = this.secrets.keyFor(text, signature);
    if (!frames) return { ok: false, refused: "bad_signature" };
    const at = Number(timestamp);
    if (!Number.isSafeInteger(at) || Math.abs(now - at) > this.options.clockWindowMs) {
      return { ok: false, refused: "clock" };
    }
    this.forgetOld(now);
    if (this.seen.has(nonce)) return { ok: false, refused: "replay" };
    this.seen.set(nonce, at + this.options.clockWindowMs);
    return { ok: true, nonce, body, frames };
  }

  private forgetOld(now: number): void {
    // Insertion order is roughly expiry order: stop at the first one still in its window.
    for (const [nonce, until] of this.seen) {
      if (until >= now && this.seen.size <= (this.options.maxRemembered ?? 1_000_000)) break;
      this.seen.delete(nonce);
    }
  }
}

export function bodyDigest(body: SignedRequest["body"]): string {
  if (body === FRAMED_BODY) return FRAMED_BODY;
  return createHash("sha256")
    .update(body ?? "")
    .digest("base64url");
}

/** True when `bytes` are the body whose digest was signed (constant time). */
export function bodyMatches(signedDigest: string, bytes: Buffer): boolean {
  const given = Buffer.from(signedDigest, "utf8");
  const actual = Buffer.from(bodyDigest(bytes), "utf8");
  return given.length === actual.length && timingSafeEqual(given, actual);
}

function headerLines(names: readonly string[], headers: HeaderLookup): string[] {
  return names.map((name) => `${name}:${headers(name) ?? ""}`);
}

function requestText(
  request: Omit<SignedRequest, "headers" | "body">,
  headers: HeaderLookup,
  timestamp: string,
  nonce: string,
  body: string,
): string {
  return [
    VERSION,
    request.nodeId,
    request.method.toUpperCase(),
    request.target,
    timestamp,
    nonce,
    body,
    ...headerLines(SIGNED_REQUEST_HEADERS, headers),
  ].join("\n");
}

function answerText(nonce: string, status: number, headers: HeaderLookup): string {
  return [VERSION, "answer", nonce, String(status), ...headerLines(SIGNED_ANSWER_HEADERS, headers)].join(
    "\n",
  );
}
