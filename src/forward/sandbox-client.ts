/**
 * The gateway's HTTP client to leased sandboxes (undici `request` over one keep-alive
 * agent, not `fetch`: no body cloning, streams both ways). Transport failures become the
 * gateway's own errors: a sandbox that does not answer in time is 504 `sandbox.timeout`,
 * one that cannot be reached or hangs up is 502 `sandbox.unreachable`.
 */
import type { Readable } from "node:stream";
import { type Agent, type Dispatcher, errors } from "undici";
import { SandpoolError } from "../contract/error-codes.js";
import { readCapped } from "./read-capped.js";
import { createSandboxAgent, sandboxOrigin } from "./sandbox-agent.js";

export interface ForwardRequest {
  method: Dispatcher.HttpMethod;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer | Readable | null;
  /** Deadline for the response headers (the sandbox works before it answers). */
  timeoutMs: number;
}

export class SandboxClient {
  private readonly agent: Agent;

  constructor(options: { connectTimeoutMs?: number; connectionsPerSandbox?: number } = {}) {
    this.agent = createSandboxAgent({
      keepAliveTimeout: 30_000,
      connections: options.connectionsPerSandbox ?? 8,
      connect: { timeout: options.connectTimeoutMs ?? 2_000 },
    });
  }

  async send(endpoint: string, forward: ForwardRequest): Promise<Dispatcher.ResponseData> {
    try {
      // The agent's own request, given origin and path: undici's top-level `request` would
      // parse the whole URL again on every call.
      return await this.agent.request({
        origin: sandboxOrigin(endpoint),
        path: forward.path,
        method: forward.method,
        headers: forward.headers,
        body: forward.body ?? null,
        headersTimeout: forward.timeoutMs,
        // Streams (file downloads) may pause for a slow client; a stalled sandbox still ends.
        bodyTimeout: Math.max(forward.timeoutMs, 30_000),
      });
    } catch (error) {
      throw mapTransportError(error);
    }
  }

  /**
   * Sends and reads a small JSON answer (at most `maxBytes`; more is `sandbox.bad_answer`);
   * non-2xx answers are returned, not thrown.
   */
  async json(
    endpoint: string,
    forward: ForwardRequest,
    maxBytes = SMALL_ANSWER_BYTES,
  ): Promise<{ status: number; body: unknown }> {
    const response = await this.send(endpoint, forward);
    const read = await readCapped(response.body, maxBytes).catch((error) => {
      throw mapTransportError(error);
    });
    if (read.overflowed) throw answerTooLarge(maxBytes);
    const text = read.bytes.toString("utf8");
    return { status: response.statusCode, body: text.length > 0 ? JSON.parse(text) : undefined };
  }

  /** Creates the session inside a freshly started sandbox; returns its inner session id. */
  async createInnerSession(endpoint: string, timeoutMs: number): Promise<string> {
    return this.newInnerSession(endpoint, "/sessions", timeoutMs);
  }

  /**
   * Scrubs a sandbox whose sessions ended and creates its next session in it (the sandbox
   * server's `POST /sandbox/recycle`): the id of that session. Throws when the sandbox could
   * not vouch for a clean state; it must then be destroyed, never reused.
   */
  async recycleSandbox(endpoint: string, timeoutMs: number): Promise<string> {
    return this.newInnerSession(endpoint, "/sandbox/recycle", timeoutMs);
  }

  private async newInnerSession(endpoint: string, path: string, timeoutMs: number): Promise<string> {
    const answer = await this.json(endpoint, {
      method: "POST",
      path,
      headers: { "content-type": "application/json" },
      body: "{}",
      timeoutMs,
    });
    const id = (answer.body as { session_id?: unknown } | undefined)?.session_id;
    if (answer.status !== 201 || typeof id !== "string") {
      const message = (answer.body as { detail?: { message?: unknown } } | undefined)?.detail?.message;
      throw new Error(
        `the sandbox refused to create a session (${answer.status}${typeof message === "string" ? `: ${message}` : ""})`,
      );
    }
    return id;
  }

  /**
   * Closes the session inside a sandbox (its processes killed, its id forgotten): a call
   * forwarded to it later is the sandbox's 404. Best effort: a sandbox that cannot be
   * reached serves no call either, and its destruction follows.
   */
  async closeInnerSession(endpoint: string, innerSessionId: string, timeoutMs: number): Promise<void> {
    await this.json(endpoint, {
      method: "DELETE",
      path: `/sessions/${encodeURIComponent(innerSessionId)}`,
      timeoutMs,
    }).catch(() => {});
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** Answers that are handles and error bodies: a few hundred bytes when the sandbox is sound. */
export const SMALL_ANSWER_BYTES = 64 * 1024;

/** A sandbox that answers more than the gateway reads is broken or hostile: a sandbox failure. */
export function answerTooLarge(maxBytes: number): SandpoolError {
  return new SandpoolError(
    "sandbox.bad_answer",
    `the sandbox's answer was larger than the ${maxBytes} bytes the gateway reads`,
  );
}

export function mapTransportError(error: unknown): SandpoolError {
  if (error instanceof SandpoolError) return error;
  if (error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError) {
    return new SandpoolError("sandbox.timeout", "the sandbox did not answer in time", { cause: error });
  }
  return new SandpoolError("sandbox.unreachable", "the sandbox could not be reached", { cause: error });
}

const OUTLIVED = Symbol("the session outlives this failure");

/**
 * Marks a sandbox failure that must not end the session where it happened: a node that
 * cannot be reached may be lost (the edges then end its sessions, reason node_lost) or
 * back in a moment (its sessions go on). The caller still answers the failure (502).
 */
export function outlivedBySession(error: SandpoolError): SandpoolError {
  (error as unknown as Record<symbol, boolean>)[OUTLIVED] = true;
  return error;
}

export function isOutlivedBySession(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[OUTLIVED] === true;
}
