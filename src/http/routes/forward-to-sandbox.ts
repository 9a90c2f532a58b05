/**
 * Sends one request to the sandbox serving a session and turns what can go wrong into the
 * session's end: a sandbox that is unreachable or times out ends the session (its state
 * is in doubt), and so does a sandbox that no longer knows the inner session. The client
 * then gets 502/504, or the same 404 as for any unknown session.
 *
 * Successful answers stream back untouched (bodies and unknown fields pass through);
 * error answers are small JSON and are read whole, so they can be inspected.
 */
import { Readable } from "node:stream";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { SandpoolError } from "../../contract/error-codes.js";
import { type ForwardRequest, mapTransportError } from "../../forward/sandbox-client.js";
import type { Lease } from "../../store/coordination/records.js";
import type { GatewayServices } from "../gateway-services.js";

export interface SandboxAnswer {
  status: number;
  headers: Record<string, string>;
  /** A stream for successful answers unless `buffer` was asked for; bytes otherwise. */
  body: Readable | Buffer;
}

/** Headers of a sandbox answer that mean the same thing to the gateway's client. */
const PASSED_HEADERS = ["content-type", "content-length", "content-disposition", "retry-after"];

export async function forwardToSandbox(
  services: GatewayServices,
  lease: Lease,
  request: Omit<ForwardRequest, "path"> & { subPath: string; query?: string; buffer?: boolean },
): Promise<SandboxAnswer> {
  const key = { workspace: lease.workspace, sessionId: lease.sessionId };
  const inner = encodeURIComponent(lease.sandbox.innerSessionId);
  const path = `/sessions/${inner}${request.subPath}${request.query ? `?${request.query}` : ""}`;
  try {
    const response = await services.sandboxes.send(lease.sandbox.endpoint, { ...request, path });
    const headers: Record<string, string> = {};
    for (const name of PASSED_HEADERS) {
      const value = response.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
    const ok = response.statusCode >= 200 && response.statusCode < 300;
    if (ok && !request.buffer) return { status: response.statusCode, headers, body: response.body };
    const body = await readAll(response.body);
    if (response.statusCode === 404 && errorCode(body) === "session.not_found") {
      await services.sessions.end(key, "sandbox_failed");
      throw new SandpoolError("session.not_found", "no such session");
    }
    return { status: response.statusCode, headers, body };
  } catch (error) {
    if (error instanceof SandpoolError && error.code.startsWith("sandbox.")) {
      await services.sessions.end(key, "sandbox_failed");
    }
    throw error;
  }
}

async function readAll(body: Readable): Promise<Buffer> {
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  } catch (error) {
    throw mapTransportError(error);
  }
}

/**
 * The client's response to a sandbox answer. Built through the context (not `new Response`)
 * so headers set earlier in the pipeline (X-Request-Id) are part of it from the start: a
 * header added to a finished response makes Hono rebuild it around a web stream, which the
 * Node adapter then drains chunk by chunk instead of writing the bytes at once.
 */
export function toResponse(c: Context, answer: SandboxAnswer): Response {
  if (answer.status === 204) return c.body(null, 204, answer.headers);
  const body = Buffer.isBuffer(answer.body)
    ? (answer.body as Uint8Array<ArrayBuffer>)
    : (Readable.toWeb(answer.body) as unknown as ReadableStream<Uint8Array>);
  return c.body(body, answer.status as ContentfulStatusCode, answer.headers);
}

function errorCode(body: Buffer): unknown {
  try {
    return (JSON.parse(body.toString("utf8")) as { detail?: { code?: unknown } }).detail?.code;
  } catch {
    return undefined;
  }
}
