/**
 * How a node answers an edge's authenticated request: the head signed (the request's nonce,
 * the status and the headers an edge acts on, node-signature.ts) and every body sent as MAC
 * frames chained from that signature (mac-frames.ts), a whole one at once or a stream (a
 * relayed download, an Execute's event stream) frame by frame as its chunks come. The
 * body's own length travels signed (x-sandpool-node-length); on the wire a framed stream is
 * chunked.
 */
import type { ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { SandpoolError } from "../../contract/error-codes.js";
import { type FrameKey, FrameSigner, framedBody } from "../shared/mac-frames.js";
import {
  NODE_ERROR_HEADER,
  type NodeSecrets,
  SIGNATURE_HEADERS,
  SIGNED_ANSWER_HEADERS,
} from "../shared/node-signature.js";

/** Statuses that carry no body: their answer is the signed head alone. */
export function bodyless(status: number): boolean {
  return status === 204 || status === 304 || status < 200;
}

export class SignedAnswer {
  constructor(
    private readonly res: ServerResponse,
    private readonly secrets: NodeSecrets,
    private readonly nonce: string,
  ) {}

  get sent(): boolean {
    return this.res.headersSent;
  }

  /** A whole answer: JSON (an object) or bytes. */
  send(status: number, headers: Record<string, string> = {}, body?: Buffer | string | object): void {
    if (bodyless(status)) {
      this.res.writeHead(status, this.head(status, headers).headers).end();
      return;
    }
    const bytes =
      body === undefined
        ? Buffer.alloc(0)
        : Buffer.isBuffer(body)
          ? body
          : Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
    const typed =
      typeof body === "object" && !Buffer.isBuffer(body)
        ? { "content-type": "application/json", ...headers }
        : headers;
    const head = this.head(status, { ...typed, [SIGNATURE_HEADERS.length]: String(bytes.length) });
    const framed = framedBody(head.frames, bytes);
    this.res.writeHead(status, { ...head.headers, "content-length": String(framed.length) }).end(framed);
  }

  /** A node's SandpoolError, with its code for the edge to answer as on one host. */
  error(failure: SandpoolError): void {
    this.send(
      failure.status,
      {
        [NODE_ERROR_HEADER]: failure.code,
        ...(failure.retryAfterSeconds ? { "retry-after": String(failure.retryAfterSeconds) } : {}),
      },
      failure.toBody(),
    );
  }

  /**
   * The head now, then `body` frame by frame as it comes (backpressure both ways). Resolves
   * when the last frame is written; rejects, with the answer cut, when `body` fails.
   */
  async stream(status: number, headers: Record<string, string>, body: Readable): Promise<void> {
    if (bodyless(status)) {
      body.resume();
      this.send(status, headers);
      return;
    }
    const head = this.head(status, headers);
    this.res.writeHead(status, head.headers);
    // The head goes out at once: an event stream's client waits on it before the first event.
    this.res.flushHeaders();
    await pipeline(body, new FrameSigner(head.frames), this.res);
  }

  /** The signed headers (and only those) with their signature, and the body's frame key. */
  private head(
    status: number,
    headers: Record<string, string>,
  ): { headers: Record<string, string>; frames: FrameKey } {
    const signed: Record<string, string> = {};
    for (const name of SIGNED_ANSWER_HEADERS) {
      const value = headers[name];
      if (value !== undefined) signed[name] = value;
    }
    const signature = this.secrets.signAnswer(this.nonce, status, (name) => signed[name]);
    signed[SIGNATURE_HEADERS.answer] = signature.header;
    return { headers: signed, frames: signature.frames };
  }
}
