/**
 * ListFiles, GetFile and PutFile through the pipeline. Bodies stream both ways: a
 * download is never held in the gateway's memory, and neither is an upload. The
 * workspace's file-size cap is checked on Content-Length before anything is read, and
 * handed to the sandbox, which enforces it exactly while it writes. A transfer counts as
 * a call in flight until its last byte, so a slow one is never reaped as idle. Each call is
 * one store round trip as it begins (resolve and mark busy) and one as it ends. Downloads
 * are always attachments, never sniffed (`downloadHeaders`).
 */
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import type { Context, Hono } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import { MAX_FILE_BYTES_HEADER } from "../../contract/headers.js";
import { fileSizeAllowed } from "../../policy/decide-access.js";
import { refusalOf } from "../../policy/verdict.js";
import { attachmentDisposition, fileNameOf } from "../common/content-disposition.js";
import type { GatewayEnv } from "../gateway-env.js";
import type { GatewayServices } from "../gateway-services.js";
import { forwardToSandbox, type SandboxAnswer, toResponse } from "./forward-to-sandbox.js";
import { openSessionCall, refuseInOrder, sessionCallPolicy } from "./open-session-call.js";

/** Longest a transfer may keep its session from idling out if its end is never seen. */
const TRANSFER_DEADLINE_MS = 30 * 60_000;

function rawQuery(c: Context<GatewayEnv>): string {
  const url = c.req.url;
  const question = url.indexOf("?");
  return question >= 0 ? url.slice(question + 1) : "";
}

/** Calls `done` once the answer's body has been sent (or abandoned), or now if it is bytes. */
function afterBody(answer: SandboxAnswer, done: () => Promise<void>): SandboxAnswer {
  if (Buffer.isBuffer(answer.body)) {
    void done();
  } else {
    answer.body.once("close", () => void done());
  }
  return answer;
}

/** A media type and its parameters, nothing a browser could read otherwise. */
const MEDIA_TYPE =
  /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;\s*[A-Za-z0-9!#$&^_.+-]+=("[^"\\]*"|[A-Za-z0-9!#$&^_.+-]+))*$/;

/**
 * What a download answers with is the gateway's decision, not the sandbox's: never sniffed,
 * always an attachment named after the requested path, so a browser opening a GetFile URL
 * saves an `.html` or `.svg` instead of running it. A type the sandbox names is kept only
 * when it is a plain media type.
 */
function downloadHeaders(answer: SandboxAnswer, path: string | undefined): void {
  answer.headers["x-content-type-options"] = "nosniff";
  if (answer.status !== 200) return;
  answer.headers["content-disposition"] = attachmentDisposition(fileNameOf(path));
  const type = answer.headers["content-type"];
  if (type === undefined || !MEDIA_TYPE.test(type))
    answer.headers["content-type"] = "application/octet-stream";
}

export function registerFileRoutes(app: Hono<GatewayEnv>, services: GatewayServices): void {
  const timeoutMs = services.limits.sandboxRequestTimeoutMs;

  app.get("/sessions/:id/files/list", async (c) => {
    const { call } = await openSessionCall(c, services, { deadlineMs: timeoutMs });
    try {
      const answer = await forwardToSandbox(services, call.lease, {
        method: "GET",
        subPath: "/files/list",
        query: rawQuery(c),
        timeoutMs,
      });
      return toResponse(c, answer);
    } finally {
      await call.end();
    }
  });

  app.get("/sessions/:id/files", async (c) => {
    const { key, call } = await openSessionCall(c, services, { deadlineMs: TRANSFER_DEADLINE_MS });
    const end = () => call.end().then(() => undefined);
    let answer: SandboxAnswer;
    try {
      answer = await forwardToSandbox(services, call.lease, {
        method: "GET",
        subPath: "/files",
        query: rawQuery(c),
        timeoutMs,
      });
    } catch (error) {
      await end();
      throw error;
    }
    downloadHeaders(answer, c.req.query("path"));
    if (answer.status === 200) {
      const bytes = Number(answer.headers["content-length"] ?? 0);
      services.usage.record({
        workspace: key.workspace,
        sessionId: key.sessionId,
        kind: "file_out",
        quantity: bytes,
      });
    }
    return toResponse(c, afterBody(answer, end));
  });

  app.post("/sessions/:id/files", async (c) => {
    const { key, policy } = await sessionCallPolicy(c, services);
    const declared = Number(c.req.header("content-length"));
    const size = fileSizeAllowed(policy, declared);
    if (!size.allowed) await refuseInOrder(services, key, refusalOf(size));
    const raw = c.req.raw.body;
    if (!raw) {
      await refuseInOrder(
        services,
        key,
        new SandpoolError("request.malformed", "PutFile needs a multipart body"),
      );
    }
    const headers: Record<string, string> = {
      "content-type": c.req.header("content-type") ?? "application/octet-stream",
      [MAX_FILE_BYTES_HEADER]: String(policy.maxFileBytes),
    };
    if (Number.isFinite(declared)) headers["content-length"] = String(declared);
    const call = await services.sessions.beginCall(key, { deadlineMs: TRANSFER_DEADLINE_MS });
    let answer: SandboxAnswer;
    try {
      answer = await forwardToSandbox(services, call.lease, {
        method: "POST",
        subPath: "/files",
        headers,
        body: Readable.fromWeb(raw as WebReadableStream<Uint8Array>),
        // The upload streams through before the sandbox answers: allow for a slow sender.
        timeoutMs: TRANSFER_DEADLINE_MS,
        buffer: true,
      });
    } finally {
      await call.end();
    }
    if (answer.status === 201) {
      const stored = JSON.parse((answer.body as Buffer).toString("utf8")) as { size_bytes?: number };
      services.usage.record({
        workspace: key.workspace,
        sessionId: key.sessionId,
        kind: "file_in",
        quantity: stored.size_bytes ?? 0,
      });
    }
    return toResponse(c, answer);
  });
}
