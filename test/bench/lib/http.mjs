/**
 * A minimal keep-alive JSON client for loopback benches. Uses undici (one Client, one
 * connection) when the project has it installed, else node:http with a keep-alive Agent;
 * either way consecutive requests reuse the same socket.
 */
import { Agent, request } from "node:http";

/** The undici module, or undefined when it is not installed. */
const undici = await import("undici").catch(() => undefined);

/** "undici" when installed, else "node:http". */
export const defaultHttpKind = undici ? "undici" : "node:http";

function parseBody(method, path, contentType, text) {
  if (!(contentType ?? "").includes("application/json") || text.length === 0) return text;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${method} ${path}: invalid JSON: ${error.message}`);
  }
}

function encode(payload) {
  const body = payload === undefined ? undefined : Buffer.from(JSON.stringify(payload));
  const headers = body ? { "content-type": "application/json", "content-length": String(body.length) } : {};
  return { body, headers };
}

function undiciClient(baseUrl, timeoutMs) {
  const client = new undici.Client(new URL(baseUrl).origin, {
    pipelining: 1,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  return {
    kind: "undici",
    async send(method, path, payload) {
      const { body, headers } = encode(payload);
      const res = await client.request({ method, path, headers, body });
      const text = await res.body.text();
      const contentType = res.headers["content-type"];
      return { status: res.statusCode, body: parseBody(method, path, contentType, text), text };
    },
    close: () => client.close(),
  };
}

function nodeHttpClient(baseUrl, timeoutMs) {
  const url = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  return {
    kind: "node:http",
    send(method, path, payload) {
      const { body, headers } = encode(payload);
      return new Promise((resolve, reject) => {
        const req = request(
          { agent, host: url.hostname, port: url.port, method, path, headers, timeout: timeoutMs },
          (res) => {
            const chunks = [];
            res.on("data", (chunk) => chunks.push(chunk));
            res.on("error", reject);
            res.on("end", () => {
              const text = Buffer.concat(chunks).toString("utf8");
              try {
                const parsed = parseBody(method, path, res.headers["content-type"], text);
                resolve({ status: res.statusCode ?? 0, body: parsed, text });
              } catch (error) {
                reject(error);
              }
            });
          },
        );
        req.on("timeout", () => req.destroy(new Error(`${method} ${path} timed out after ${timeoutMs} ms`)));
        req.on("error", reject);
        req.end(body);
      });
    },
    close: async () => agent.destroy(),
  };
}

/**
 * A client for `baseUrl` (http:// only). `kind` picks the transport: "undici", "node:http",
 * or "auto" (undici when installed). send(method, path, payload?) resolves with
 * { status, body (parsed when JSON), text }; close() releases the connection.
 */
export function createJsonClient(baseUrl, { kind = "auto", timeoutMs = 30_000 } = {}) {
  if (new URL(baseUrl).protocol !== "http:") throw new Error(`only http:// is supported, got ${baseUrl}`);
  const chosen = kind === "auto" ? defaultHttpKind : kind;
  if (chosen === "undici") {
    if (!undici) throw new Error("undici is not installed");
    return undiciClient(baseUrl, timeoutMs);
  }
  if (chosen !== "node:http") throw new Error(`unknown HTTP client kind ${kind}`);
  return nodeHttpClient(baseUrl, timeoutMs);
}
