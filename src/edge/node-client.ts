/**
 * The edge's HTTP client to nodes: one undici Agent (keep-alive, TCP_NODELAY) for every
 * node, each request signed and each answer's signature checked. It is the gateway's
 * SandboxClient for sandboxes held by nodes, whose endpoints read `node:<node>/<sandbox>`:
 * the contract routes forward to them exactly as to a local sandbox, one hop further.
 * Anything else goes to the local sandbox client's path unchanged.
 */
import type { Readable } from "node:stream";
import { Agent, type Dispatcher, request } from "undici";
import { type ErrorCode, errorStatus, SandpoolError } from "../contract/error-codes.js";
import {
  type ForwardRequest,
  mapTransportError,
  outlivedBySession,
  SandboxClient,
} from "../forward/sandbox-client.js";
import { NODE_ERROR_HEADER, NODE_TIMEOUT_HEADER } from "../node/node-api.js";
import { type NodeSecrets, SIGNATURE_HEADERS, STREAMED_BODY } from "../nodes/node-signature.js";
import type { NodeDirectory } from "./node-directory.js";

const NODE_SCHEME = "node:";

export function nodeEndpoint(nodeId: string, sandboxId: string): string {
  return `${NODE_SCHEME}${nodeId}/${sandboxId}`;
}

export function parseNodeEndpoint(endpoint: string): { nodeId: string; sandboxId: string } | undefined {
  if (!endpoint.startsWith(NODE_SCHEME)) return undefined;
  const [nodeId, sandboxId] = endpoint.slice(NODE_SCHEME.length).split("/");
  return nodeId && sandboxId ? { nodeId, sandboxId } : undefined;
}

export type RoutingError = "node_unreachable" | "bad_signature" | "node_lost";

export class NodeClient extends SandboxClient {
  private readonly nodeAgent = new Agent({
    keepAliveTimeout: 30_000,
    connections: 64,
    connect: { timeout: 2_000, noDelay: true },
  });

  constructor(
    private readonly secrets: NodeSecrets,
    private readonly directory: NodeDirectory,
    private readonly onRoutingError: (reason: RoutingError) => void = () => {},
  ) {
    super();
  }

  override async send(endpoint: string, forward: ForwardRequest): Promise<Dispatcher.ResponseData> {
    const target = parseNodeEndpoint(endpoint);
    if (!target) return super.send(endpoint, forward);
    return this.call(target.nodeId, {
      ...forward,
      path: `/node/v1/sandboxes/${target.sandboxId}/relay${forward.path}`,
    });
  }

  /** A signed request to a node's API; a node's SandpoolError answer is thrown as one. */
  async call(nodeId: string, forward: ForwardRequest): Promise<Dispatcher.ResponseData> {
    const node = this.directory.get(nodeId);
    if (!node || node.state === "lost") {
      this.onRoutingError("node_lost");
      throw new SandpoolError("sandbox.unreachable", "the node serving this session is gone");
    }
    const body = forward.body ?? undefined;
    const streamed = body !== undefined && !(typeof body === "string" || Buffer.isBuffer(body));
    const signed = this.secrets.sign({
      nodeId,
      method: forward.method,
      target: forward.path,
      body: streamed ? STREAMED_BODY : (body as string | Buffer | undefined),
    });
    let response: Dispatcher.ResponseData;
    try {
      response = await request(`${node.url}${forward.path}`, {
        method: forward.method,
        headers: { ...forward.headers, ...signed, [NODE_TIMEOUT_HEADER]: String(forward.timeoutMs) },
        body: (body as string | Buffer | Readable | undefined) ?? null,
        dispatcher: this.nodeAgent,
        // The node relays the sandbox's deadline; its own hop gets a little on top.
        headersTimeout: forward.timeoutMs + 2_000,
        bodyTimeout: Math.max(forward.timeoutMs, 30_000),
      });
    } catch (error) {
      this.onRoutingError("node_unreachable");
      // Whether the node is lost is the registry's to say: its sessions end then, node_lost.
      throw outlivedBySession(mapTransportError(error));
    }
    const answer = response.headers[SIGNATURE_HEADERS.answer];
    if (!this.secrets.verifyAnswer(signed[SIGNATURE_HEADERS.nonce]!, response.statusCode, answer as string)) {
      response.body.destroy();
      this.onRoutingError("bad_signature");
      throw new SandpoolError("sandbox.bad_answer", "the node's answer was not signed with a node secret");
    }
    const code = response.headers[NODE_ERROR_HEADER];
    if (typeof code === "string") {
      const text = await response.body.text().catch(() => "");
      const message = (() => {
        try {
          return (JSON.parse(text) as { detail?: { message?: string } }).detail?.message;
        } catch {
          return undefined;
        }
      })();
      const known = code in errorStatus ? (code as ErrorCode) : "sandbox.bad_answer";
      const retry = Number(response.headers["retry-after"]);
      throw new SandpoolError(known, message ?? "the node refused", {
        retryAfterSeconds: Number.isFinite(retry) && retry > 0 ? retry : undefined,
      });
    }
    return response;
  }

  /** A node's small JSON answer (a lease, a usage); 204 is undefined. */
  async nodeJson<T>(
    nodeId: string,
    forward: ForwardRequest,
  ): Promise<{ status: number; body: T | undefined }> {
    const response = await this.call(nodeId, forward);
    const text = await response.body.text();
    return { status: response.statusCode, body: text ? (JSON.parse(text) as T) : undefined };
  }

  override async close(): Promise<void> {
    await Promise.all([super.close(), this.nodeAgent.close()]);
  }
}
