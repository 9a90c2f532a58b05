/**
 * Edge <-> node authentication with shared secrets (HMAC-SHA256), both ways.
 *
 * An edge signs every request to a node over (target node id, method, path and query,
 * timestamp, nonce, body digest or "stream"); the node accepts it only within a clock window
 * and only once (the nonce is remembered for that window), under any of its secrets. The
 * node's answer carries an HMAC over the request's nonce and the status, which the edge
 * checks: a node that does not hold the secret cannot pass itself off as one.
 *
 * Rotation: the first secret signs, every secret listed verifies. Add the new one second
 * everywhere, then move it first, then drop the old one; no request is refused meanwhile.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADERS = {
  timestamp: "x-sandpool-node-timestamp",
  nonce: "x-sandpool-node-nonce",
  body: "x-sandpool-node-body",
  signature: "x-sandpool-node-signature",
  answer: "x-sandpool-node-answer",
} as const;

/** A body sent as a stream (an upload) is not digested: its bytes are not known when signing. */
export const STREAMED_BODY = "stream";
const VERSION = "v1";

export interface SignedRequest {
  /** The node the request is for: a request captured for one node is refused by another. */
  nodeId: string;
  method: string;
  /** Path and query as sent. */
  target: string;
  /** The body's bytes, or STREAMED_BODY for a stream; absent for no body. */
  body?: string | Buffer | typeof STREAMED_BODY;
}

export type SignatureRefusal = "missing" | "bad_signature" | "clock" | "replay" | "body_mismatch";

export class NodeSecrets {
  private readonly keys: Buffer[];

  constructor(secrets: readonly string[]) {
    if (secrets.length === 0) throw new Error("at least one node secret is needed");
    this.keys = secrets.map((secret) => Buffer.from(secret, "utf8"));
  }

  /** The headers that authenticate `request`, signed with the first secret. */
  sign(request: SignedRequest, now = Date.now()): Record<string, string> {
    const timestamp = String(now);
    const nonce = randomBytes(16).toString("base64url");
    const body = bodyDigest(request.body);
    return {
      [SIGNATURE_HEADERS.timestamp]: timestamp,
      [SIGNATURE_HEADERS.nonce]: nonce,
      [SIGNATURE_HEADERS.body]: body,
      [SIGNATURE_HEADERS.signature]: `${VERSION}=${this.mac(this.keys[0]!, requestText(request, timestamp, nonce, body))}`,
    };
  }

  /** True when `signature` was made over `text` with any of the secrets (constant time). */
  matches(text: string, signature: string): boolean {
    const given = Buffer.from(signature, "utf8");
    let matched = false;
    for (const key of this.keys) {
      const expected = Buffer.from(this.mac(key, text), "utf8");
      if (expected.length === given.length && timingSafeEqual(expected, given)) matched = true;
    }
    return matched;
  }

  /** The node's answer signature for a request's nonce and the answer's status. */
  signAnswer(nonce: string, status: number): string {
    return `${VERSION}=${this.mac(this.keys[0]!, answerText(nonce, status))}`;
  }

  verifyAnswer(nonce: string, status: number, header: string | undefined): boolean {
    if (!header?.startsWith(`${VERSION}=`)) return false;
    return this.matches(answerText(nonce, status), header.slice(VERSION.length + 1));
  }

  private mac(key: Buffer, text: string): string {
    return createHmac("sha256", key).update(text).digest("base64url");
  }
}

/** What the node checks on each request; nonces are remembered for the clock window. */
export class RequestVerifier {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly secrets: NodeSecrets,
    private readonly options: { nodeId: string; clockWindowMs: number; maxRemembered?: number },
  ) {}

  /**
   * Checks the headers of a request to this node. `body` is its bytes when buffered; for a
   * streamed body pass STREAMED_BODY (and the signer must have said "stream" too). Returns
   * the nonce (to sign the answer with) or the reason for refusing it.
   */
  verify(
    request: Omit<SignedRequest, "nodeId">,
    headers: (name: string) => string | undefined,
    now = Date.now(),
  ): { ok: true; nonce: string } | { ok: false; refused: SignatureRefusal } {
    const timestamp = headers(SIGNATURE_HEADERS.timestamp);
    const nonce = headers(SIGNATURE_HEADERS.nonce);
    const body = headers(SIGNATURE_HEADERS.body);
    const signature = headers(SIGNATURE_HEADERS.signature);
    if (!timestamp || !nonce || !body || !signature?.startsWith(`${VERSION}=`)) {
      return { ok: false, refused: "missing" };
    }
    const text = requestText({ ...request, nodeId: this.options.nodeId }, timestamp, nonce, body);
    if (!this.secrets.matches(text, signature.slice(VERSION.length + 1))) {
      return { ok: false, refused: "bad_signature" };
    }
    const at = Number(timestamp);
    if (!Number.isSafeInteger(at) || Math.abs(now - at) > this.options.clockWindowMs) {
      return { ok: false, refused: "clock" };
    }
    // Signed, and its digest is part of what was signed: the bytes must be the ones signed.
    if (request.body !== STREAMED_BODY && body !== bodyDigest(request.body)) {
      return { ok: false, refused: "body_mismatch" };
    }
    this.forgetOld(now);
    if (this.seen.has(nonce)) return { ok: false, refused: "replay" };
    this.seen.set(nonce, at + this.options.clockWindowMs);
    return { ok: true, nonce };
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
  if (body === STREAMED_BODY) return STREAMED_BODY;
  return createHash("sha256")
    .update(body ?? "")
    .digest("base64url");
}

function requestText(request: SignedRequest, timestamp: string, nonce: string, body: string): string {
  return [VERSION, request.nodeId, request.method.toUpperCase(), request.target, timestamp, nonce, body].join(
    "\n",
  );
}

function answerText(nonce: string, status: number): string {
  return [VERSION, "answer", nonce, String(status)].join("\n");
}
