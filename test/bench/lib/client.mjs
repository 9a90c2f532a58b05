/**
 * The benches' HTTP client: one keep-alive connection (undici, which sets TCP_NODELAY) with
 * an optional bearer token. Every path is measured with it, so client-side cost cancels out.
 */
import { createServer } from "node:net";
import { Client } from "undici";

export const CALL_TIMEOUT_MS = 30_000;

/** `timeoutMs`: how long an answer may take (its headers, then each part of its body). */
export function createClient(baseUrl, token, { timeoutMs = CALL_TIMEOUT_MS } = {}) {
  const client = new Client(originOf(baseUrl), {
    ...connectionOf(baseUrl),
    pipelining: 1,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  const auth = token ? { authorization: `Bearer ${token}` } : {};
  return {
    async send(method, path, payload) {
      const body = payload === undefined ? undefined : JSON.stringify(payload);
      const headers = body
        ? { ...auth, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }
        : auth;
      const res = await client.request({ method, path, headers, body });
      const text = await res.body.text();
      const json = (res.headers["content-type"] ?? "").includes("application/json") && text.length > 0;
      return { status: res.statusCode, body: json ? JSON.parse(text) : text, text };
    },
    close: () => client.close(),
  };
}

/** `unix:///path/to/socket` (a sandbox container's) or an http URL: undici's origin for it. */
export function originOf(baseUrl) {
  return baseUrl.startsWith("unix://") ? "http://localhost" : new URL(baseUrl).origin;
}

/** The connection options for `baseUrl`: its socket path for a `unix://` one. */
export function connectionOf(baseUrl) {
  return baseUrl.startsWith("unix://") ? { socketPath: baseUrl.slice("unix://".length) } : {};
}

/** A free loopback port: bound, read, released. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** POST /sessions; the new session's id, or an error naming the answer. */
export async function createSession(client) {
  const answer = await client.send("POST", "/sessions", {});
  if (answer.status !== 201 || typeof answer.body?.session_id !== "string") {
    throw new Error(`POST /sessions answered ${answer.status}: ${answer.text}`);
  }
  return answer.body.session_id;
}

export async function destroySession(client, sessionId) {
  const answer = await client.send("DELETE", `/sessions/${sessionId}`);
  if (answer.status !== 204) throw new Error(`DELETE answered ${answer.status}: ${answer.text}`);
}

export async function execPrintOne(client, sessionId) {
  const answer = await client.send("POST", `/sessions/${sessionId}/exec`, {
    tool: "code_execution",
    input: { code: "print(1)" },
  });
  const content = answer.body?.result_block?.content;
  if (answer.status !== 200 || content?.return_code !== 0 || content?.stdout !== "1\n") {
    throw new Error(`exec answered ${answer.status}: ${answer.text}`);
  }
}

/** Every worker (`{ client, sessionId }`) makes `calls` `print(1)` calls, all at once (a warm-up). */
export async function execEach(workers, calls) {
  await Promise.all(
    workers.map(async (w) => {
      for (let i = 0; i < calls; i++) await execPrintOne(w.client, w.sessionId);
    }),
  );
}
