/**
 * The edge's HTTP client to nodes: one undici Agent (keep-alive, TCP_NODELAY) for every
 * node, each request signed and each answer checked, head and body (node-signature.ts). It
 * is the gateway's SandboxClient for sandboxes held by nodes, whose endpoints read
 * `node:<node>/<sandbox>/<workspace>`: the contract routes forward to them exactly as to a
 * local sandbox, one hop further, and every call on the sandbox names the workspace it was
 * leased for, which the node holds it to. Anything else goes to the local sandbox client's
 * path unchanged.
 *
 * What an edge takes from a node is verified before it is used: the answer's head (status,
 * type, length, error code) against its signature, its body frame by frame (mac-frames.ts).
 * A bad head is `sandbox.bad_answer` at once. A bad frame fails the body where it stands:
 * a buffered answer (a lease, an Execute, an upload's result) is `sandbox.bad_answer`, its
 * altered bytes never used; a streamed one (a download, an Execute's event stream) has
 * passed on only frames that verified, and is cut there: a download ends short of its
 * length, an event stream with the relay's `error` event (exec-event-relay.ts), never with
 * a result the node did not send. An upload goes out as frames chained from the request's
 * signature, so the node passes on only what this edge sent.
 */
import { pipeline, type Readable } from "node:stream";
import { Agent, type Dispatcher, request } from "undici";
import { type ErrorCode, errorStatus, SandpoolError } from "../../contract/error-codes.js";
import {
  type ForwardRequest,
  mapTransportError,
  outlivedBySession,
  SandboxClient,
} from "../../forward/sandbox-client.js";
import { type FrameKey, FrameSigner, FrameVerifier } from "../shared/mac-frames.js";
import {
  FRAMED_BODY,
  NODE_ERROR_HEADER,
  NODE_TIMEOUT_HEADER,
  type NodeSecrets,
  SIGNATURE_HEADERS,
} from "../shared/node-signature.js";
import type { NodeDirectory } from "./node-directory.js";

const NODE_SCHEME = "node:";

export function nodeEndpoint(nodeId: string, sandboxId: string, workspace: string): string {
  return `${NODE_SCHEME}${nodeId}/${sandboxId}/${encodeURIComponent(workspace)}`;
}

export function parseNodeEndpoint(
  endpoint: string,
): { nodeId: string; sandboxId: string; workspace?: string } | undefined {
  if (!endpoint.startsWith(NODE_SCHEME)) return undefined;
  const [nodeId, sandboxId, workspace] = endpoint.slice(NODE_SCHEME.length).split("/");
  if (!nodeId || !sandboxId) return undefined;
  try {
    return { nodeId, sandboxId, workspace: workspace ? decodeURIComponent(workspace) : undefined };
  } catch {
    return { nodeId, sandboxId };
  }
}

export type RoutingError = "node_unreachable" | "bad_signature" | "node_lost";

/** A call to a node's API, made for `workspace` (the one its sandbox was leased to). */
export interface NodeCallRequest extends ForwardRequest {
  workspace?: string;
}

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
      workspace: target.workspace,
    });
  }

  /** A signed request to a node's API; a node's SandpoolError answer is thrown as one. */
  async call(nodeId: string, forward: NodeCallRequest): Promise<Dispatcher.ResponseData> {
    const node = this.directory.get(nodeId);
    if (!node || node.state === "lost") {
      this.onRoutingError("node_lost");
      throw new SandpoolError("sandbox.unreachable", "the node serving this session is gone");
    }
    const body = forward.body ?? undefined;
    const streamed = body !== undefined && !(typeof body === "string" || Buffer.isBuffer(body));
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(forward.headers ?? {})) headers[name.toLowerCase()] = value;
    // A framed body's length on the wire is not its own: its own travels signed.
    const declared = headers["content-length"];
    delete headers["content-length"];
    if (streamed && declared !== undefined) headers[SIGNATURE_HEADERS.length] = declared;
    headers[NODE_TIMEOUT_HEADER] = String(forward.timeoutMs);
    if (forward.workspace !== undefined) {
      headers[SIGNATURE_HEADERS.workspace] = encodeURIComponent(forward.workspace);
    }
    const signed = this.secrets.sign({
      nodeId,
      method: forward.method,
      target: forward.path,
      headers,
      body: streamed ? FRAMED_BODY : (body as string | Buffer | undefined),
    });
    let response: Dispatcher.ResponseData;
    try {
      response = await request(`${node.url}${forward.path}`, {
        method: forward.method,
        headers: { ...headers, ...signed.headers },
        body: streamed
          ? framed(body as Readable, signed.frames)
          : ((body as string | Buffer | undefined) ?? null),
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
    const answerHeader = (name: string) => {
      const value = response.headers[name];
      return typeof value === "string" ? value : undefined;
    };
    const frames = this.secrets.verifyAnswer(signed.nonce, response.statusCode, answerHeader);
    if (!frames) {
      response.body.on("error", () => undefined).destroy();
      this.onRoutingError("bad_signature");
      throw new SandpoolError("sandbox.bad_answer", "the node's answer was not signed with a node secret");
    }
    const verified = this.verifiedAnswer(response, frames);
    const code = answerHeader(NODE_ERROR_HEADER);
    if (code !== undefined) {
      const text = await verified.body.text().catch(() => "");
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
    return verified;
  }

  /** A node's small JSON answer (a lease, a usage); 204 is undefined. */
  async nodeJson<T>(
    nodeId: string,
    forward: NodeCallRequest,
  ): Promise<{ status: number; body: T | undefined }> {
    const response = await this.call(nodeId, forward);
    const text = await response.body.text();
    return { status: response.statusCode, body: text ? (JSON.parse(text) as T) : undefined };
  }

  override async close(): Promise<void> {
    await Promise.all([super.close(), this.nodeAgent.close()]);
  }

  /**
   * The answer with its body verified as it is read, and the headers the edge reads
   * reduced to the signed ones: its length is the body's own, not the framed one's.
   */
  private verifiedAnswer(response: Dispatcher.ResponseData, frames: FrameKey): Dispatcher.ResponseData {
    const length = Number(response.headers[SIGNATURE_HEADERS.length]);
    const known = Number.isSafeInteger(length) && length >= 0;
    const headers = { ...response.headers };
    delete headers["content-length"];
    delete headers["transfer-encoding"];
    if (known) headers["content-length"] = String(length);
    // No body to verify: HTTP gives a 204 or a 304 none, whatever follows its head.
    if (response.statusCode === 204 || response.statusCode === 304) return { ...response, headers };
    const body = new VerifiedBody(frames, {
      length: known ? length : undefined,
      failure: (reason) => {
        this.onRoutingError("bad_signature");
        return new SandpoolError("sandbox.bad_answer", `the node's answer was altered on its way: ${reason}`);
      },
    });
    // What undici holds already (most often a whole small answer, read with its head) is
    // verified now: a buffered read then finds it whole at once (takeIfBuffered).
    for (let chunk = response.body.read(); chunk !== null && !body.destroyed; chunk = response.body.read()) {
      body.write(chunk);
    }
    pipeline(response.body, body, () => {
      // Its error (the node's connection lost, a bad frame) is the body's reader's to hear.
    });
    return { ...response, headers, body: body as unknown as Dispatcher.ResponseData["body"] };
  }
}

/** An upload as frames chained from its request's signature. */
function framed(body: Readable, frames: FrameKey): Readable {
  const signer = new FrameSigner(frames);
  pipeline(body, signer, () => {
    // A client that goes away fails the signer, and undici's request with it.
  });
  return signer;
}

/** A verified body that reads like undici's (`text`, `json`, `dump`). */
class VerifiedBody extends FrameVerifier {
  async text(): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of this) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  async dump(): Promise<void> {
    for await (const _ of this) {
      // Read to its end, verifying it, and dropped.
    }
  }
}
