/**
 * The sandbox server's HTTP surface: contract v1 for many sessions, plus `GET /health`,
 * `GET /sessions/{id}` (the handle with the values in force) and streamed Execute
 * (`Accept: text/event-stream`, src/contract/exec-events.ts).
 */

import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { Hono } from "hono";
import type { Logger } from "pino";
import { errorBody, malformed, SandpoolError } from "../../contract/error-codes.js";
import { wantsEventStream } from "../../contract/exec-events.js";
import { MAX_FILE_BYTES_HEADER } from "../../contract/headers.js";
import { parseExecRequest } from "../../contract/parse-exec-request.js";
import { createSessionRequest, issueProblems } from "../../contract/schemas.js";
import { errorResponse } from "../../http/common/error-response.js";
import { jsonBodyLimit, readJsonBody } from "../../http/common/read-json-body.js";
import { guardRequestTarget } from "../../http/common/request-target.js";
import type { SandboxConfig } from "../config.js";
import { listFiles } from "../files/list-files.js";
import { openFile } from "../files/open-file.js";
import { receiveUpload } from "../files/receive-upload.js";
import { asWorkspaceError } from "../files/workspace-errors.js";
import type { ListenerPause } from "../hibernate/listener-pause.js";
import type { Session } from "../sessions/session.js";
import type { SessionRegistry } from "../sessions/session-registry.js";
import { executeToolCall } from "../tools/execute-tool-call.js";
import { streamedExecResponse } from "./exec-event-stream.js";

export function createSandboxApp(
  config: SandboxConfig,
  sessions: SessionRegistry,
  log: Logger,
  /** Present on a Unix socket: the gateway may pause the listener for a checkpoint. */
  listenerPause?: ListenerPause,
): Hono {
  const app = new Hono();
  app.use("*", guardRequestTarget());
  const jsonLimit = jsonBodyLimit(config.maxJsonBodyBytes);

  app.get("/health", (c) => c.json({ status: "ok", sessions: sessions.size }));

  app.post("/sessions", jsonLimit, async (c) => {
    const parsed = createSessionRequest.safeParse(await readJsonBody(c, { optional: true }));
    if (!parsed.success) throw malformed(issueProblems(parsed.error));
    const session = await sessions.create(parsed.data);
    return c.json(session.handle(), 201);
  });

  // sandpool's own: the sandbox scrubbed and its next session created, for the same workspace.
  app.post("/sandbox/recycle", jsonLimit, async (c) => {
    const parsed = createSessionRequest.safeParse(await readJsonBody(c, { optional: true }));
    if (!parsed.success) throw malformed(issueProblems(parsed.error));
    const session = await sessions.recycle(parsed.data);
    return c.json(session.handle(), 201);
  });

  // sandpool's own: stop listening until SIGUSR2, so gVisor can checkpoint the sandbox.
  if (listenerPause) {
    app.post("/sandbox/pause-listener", (c) => {
      listenerPause.pause();
      c.header("connection", "close");
      return c.json({ status: "paused" });
    });
  }

  app.get("/sessions/:id", (c) => c.json(sessions.get(c.req.param("id")).handle()));

  // Answered once the session is gone (no call finds it, its processes are signalled), not
  // once its interpreter has exited and its files are deleted: a recycle waits for that.
  app.delete("/sessions/:id", (c) => {
    void sessions.destroy(c.req.param("id"));
    return c.body(null, 204);
  });

  app.post("/sessions/:id/exec", jsonLimit, async (c) => {
    const session = sessions.get(c.req.param("id"));
    const request = parseExecRequest(await readJsonBody(c));
    session.touch();
    const runTool = <T>(work: () => Promise<T>) => sessions.runTool(work);
    if (wantsEventStream(c.req.header("accept"))) {
      return streamedExecResponse(
        (onOutput) => executeToolCall(session, request, config, { runTool, onOutput }),
        log,
      );
    }
    return c.json(await executeToolCall(session, request, config, { runTool }));
  });

  app.get("/sessions/:id/files/list", async (c) => {
    const session = sessions.get(c.req.param("id"));
    session.touch();
    const recursive = ["1", "true"].includes(c.req.query("recursive") ?? "");
    return c.json(
      await inWorkspace(session, () => listFiles(session.workspace, c.req.query("path") ?? ".", recursive)),
    );
  });

  app.get("/sessions/:id/files", async (c) => {
    const session = sessions.get(c.req.param("id"));
    const requested = c.req.query("path");
    if (!requested) throw new SandpoolError("request.malformed", "the 'path' query parameter is required");
    session.touch();
    const file = await inWorkspace(session, () => openFile(session.workspace, requested));
    return c.body(Readable.toWeb(file.stream) as unknown as ReadableStream, 200, {
      "content-type": file.mimeType,
      "content-length": String(file.size),
    });
  });

  app.post("/sessions/:id/files", async (c) => {
    const session = sessions.get(c.req.param("id"));
    session.touch();
    const raw = c.req.raw.body;
    if (!raw) throw new SandpoolError("request.malformed", "PutFile needs a multipart body");
    const headers = Object.fromEntries(c.req.raw.headers.entries());
    // The gateway passes a workspace's own cap; it can only lower the server's.
    const requestedCap = Number(c.req.header(MAX_FILE_BYTES_HEADER));
    const maxBytes =
      Number.isSafeInteger(requestedCap) && requestedCap > 0
        ? Math.min(requestedCap, config.maxUploadBytes)
        : config.maxUploadBytes;
    const body = Readable.fromWeb(raw as WebReadableStream<Uint8Array>);
    const stored = await inWorkspace(session, () =>
      receiveUpload({ workspace: session.workspace, uploadDir: session.uploadDir, maxBytes }, headers, body),
    ).catch((error: unknown) => {
      // Refused before the body was read (the workspace could not be put back): drain it, or
      // the server closes this keep-alive connection under the gateway's next call.
      body.resume();
      throw error;
    });
    session.touch();
    return c.json(stored, 201);
  });

  app.notFound((c) => c.json(errorBody("request.not_found", "no such route"), 404));
  app.onError((error, c) => errorResponse(c, error, log));
  return app;
}

/**
 * A file operation on a session's workspace: the workspace put back first if code in the
 * sandbox deleted or replaced it, and a file system error on the way the caller's 4xx.
 */
async function inWorkspace<T>(session: Session, work: () => Promise<T>): Promise<T> {
  try {
    await session.ensureUsable();
    return await work();
  } catch (error) {
    throw asWorkspaceError(error);
  }
}
