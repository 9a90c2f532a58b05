/**
 * The node's relay: a call on a held sandbox forwarded to its server, streaming both ways.
 * Only for the workspace the sandbox was leased to: any other (or none) gets the answer the
 * sandbox gives for an unknown session, so the edge ends the caller's session as it would
 * on one host, and the sandbox never sees the call. The headers passed on are the signed
 * ones the sandbox reads (type, accept, the workspace's file cap); an upload arrives as
 * verified frames (node-request-body.ts), checked here against the workspace's cap, and
 * goes on chunked; the answer goes back signed, frame by frame (signed-answer.ts).
 */
import type { IncomingMessage } from "node:http";
import { SandpoolError } from "../../contract/error-codes.js";
import { MAX_FILE_BYTES_HEADER } from "../../contract/headers.js";
import type { SandboxClient } from "../../forward/sandbox-client.js";
import { UPLOAD_FRAMING_BYTES } from "../../policy/decide-access.js";
import type { FrameKey } from "../shared/mac-frames.js";
import { NODE_TIMEOUT_HEADER, SIGNATURE_HEADERS } from "../shared/node-signature.js";
import type { NodeCall } from "./node-call.js";
import { VerifiedUpload } from "./node-request-body.js";

const PASSED_REQUEST_HEADERS = ["content-type", "accept", MAX_FILE_BYTES_HEADER];
const PASSED_ANSWER_HEADERS = ["content-type", "content-disposition", "retry-after"];

/** An upload's verified bytes, bounded by the workspace's file cap when the call carries one. */
export function uploadOf(req: IncomingMessage, frames: FrameKey): VerifiedUpload {
  const length = wholeNumber(header(req, SIGNATURE_HEADERS.length));
  const maxFileBytes = wholeNumber(header(req, MAX_FILE_BYTES_HEADER));
  const maxBytes = maxFileBytes === undefined ? undefined : maxFileBytes + UPLOAD_FRAMING_BYTES;
  if (maxBytes !== undefined && length !== undefined && length > maxBytes) {
    throw new SandpoolError("file.too_large", `the file is larger than the ${maxFileBytes}-byte cap`);
  }
  return new VerifiedUpload(req, frames, { length, maxBytes, maxFileBytes });
}

export async function relayToSandbox(call: NodeCall): Promise<void> {
  const { deps, req, answer, params, target, body } = call;
  const record = deps.sandboxes.heldFor(params[0]!, call.workspace);
  if (!record) {
    if (deps.sandboxes.holds(params[0]!)) {
      deps.log.warn(
        { sandbox: params[0], workspace: call.workspace },
        "a relay for another workspace was refused",
      );
    }
    if (!Buffer.isBuffer(body)) body.resume();
    // Not held here, or not for this workspace: the answer the sandbox gives for an unknown
    // session, so the edge ends the caller's session as it would on one host.
    answer.send(404, { "content-type": "application/json" }, unknownSession().toBody());
    return;
  }
  const query = target.includes("?") ? target.slice(target.indexOf("?")) : "";
  const headers: Record<string, string> = {};
  for (const name of PASSED_REQUEST_HEADERS) {
    const value = header(req, name);
    if (value !== undefined) headers[name] = value;
  }
  const method = (req.method ?? "GET") as "GET";
  // An upload goes on chunked: one stopped short must end as a body cut short, not as a
  // request aborted for missing the length it declared. Its length was checked here.
  if (Buffer.isBuffer(body) && (body.length > 0 || method !== "GET")) {
    headers["content-length"] = String(body.length);
  }
  const timeoutMs = Number(header(req, NODE_TIMEOUT_HEADER)) || 30_000;
  const hasBody = !(Buffer.isBuffer(body) && body.length === 0 && method === "GET");
  const upload = body instanceof VerifiedUpload ? body : undefined;
  let response: Awaited<ReturnType<SandboxClient["send"]>>;
  try {
    response = await deps.client.send(record.endpoint, {
      method,
      path: `${params[1]!}${query}`,
      headers,
      body: hasBody ? body : null,
      timeoutMs,
    });
  } catch (error) {
    throw upload?.failure ?? error;
  }
  if (upload?.failure) {
    // The upload stopped short (its cap, a bad frame): that is the answer, not the sandbox's.
    response.body.on("error", () => undefined).destroy();
    throw upload.failure;
  }
  const passed: Record<string, string> = {};
  for (const name of PASSED_ANSWER_HEADERS) {
    const value = response.headers[name];
    if (typeof value === "string") passed[name] = value;
  }
  const length = response.headers["content-length"];
  if (typeof length === "string") passed[SIGNATURE_HEADERS.length] = length;
  await answer.stream(response.statusCode, passed, response.body);
}

export function unknownSession(): SandpoolError {
  return new SandpoolError("session.not_found", "no such session");
}

function wholeNumber(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  return Number.isSafeInteger(parsed) && parsed >= 0 ? parsed : undefined;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === "string" ? value : undefined;
}
