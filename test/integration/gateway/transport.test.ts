/**
 * Pipeline steps 0 and 1 through the real gateway: request targets judged as they arrived
 * (400 before authentication), the JSON body cap (413 on Content-Length and on a chunked body,
 * answered before the body has been sent in full), the JSON content type (415), unparsable
 * JSON (400), and input validation (400 unknown tool, 422 malformed). The gateway serves the
 * contract under a base path as well as at the root; one harness covers both.
 */
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SANDPOOL_VERSION } from "../../../src/version.js";
import { assertContractResponse, assertSchema } from "../../support/contract.js";
import type { ContractClient } from "../../support/contract-client.js";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";
import { rawRequest } from "../../support/raw-http.js";

const MAX_JSON = 4096;
const BASE = "/v1/sandbox";

let harness: TestGateway;
let client: ContractClient;
let token: string;
let session: string;

beforeAll(async () => {
  harness = await startTestGateway({ basePath: BASE, limits: { maxJsonBodyBytes: MAX_JSON } });
  client = await harness.client("team-a");
  token = await harness.token("team-a");
  const created = await client.createSession();
  expect(created.status).toBe(201);
  session = (created.body as { session_id: string }).session_id;
});
afterAll(() => harness?.close());

interface Exchange {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

function parseBody(headers: Record<string, string>, text: string): unknown {
  return (headers["content-type"] ?? "").includes("application/json") && text ? JSON.parse(text) : text;
}

/**
 * Writes `head` and then `parts` on a bare socket, never finishing the body unless the parts
 * do, and resolves with the first response. Rejects when none comes within `timeoutMs`: the
 * gateway was waiting for the rest of the body.
 */
function exchange(
  head: string,
  parts: (string | Buffer)[] = [],
  timeoutMs = 5_000,
  /** A pause before each part, so that each arrives on its own. */
  gapMs = 0,
): Promise<Exchange> {
  const { hostname, port } = new URL(harness.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => finish(new Error(`no response within ${timeoutMs} ms`)), timeoutMs);
    const finish = (error: Error | undefined, answer?: Exchange) => {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(answer!);
    };
    const tryParse = (ended: boolean) => {
      const split = received.indexOf("\r\n\r\n");
      if (split < 0) return ended && finish(new Error(`incomplete response: ${received.toString("latin1")}`));
      const [statusLine, ...lines] = received.subarray(0, split).toString("latin1").split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const status = Number(statusLine!.split(" ")[1]);
      const rest = received.subarray(split + 4);
      const length = headers["content-length"];
      if (length !== undefined && rest.length >= Number(length)) {
        return finish(undefined, {
          status,
          headers,
          body: parseBody(headers, rest.subarray(0, Number(length)).toString()),
        });
      }
      if (headers["transfer-encoding"] === "chunked" && rest.includes("\r\n0\r\n\r\n")) {
        let text = "";
        for (let at = 0; ; ) {
          const eol = rest.indexOf("\r\n", at);
          const size = Number.parseInt(rest.subarray(at, eol).toString(), 16);
          if (!size) break;
          text += rest.subarray(eol + 2, eol + 2 + size).toString();
          at = eol + 2 + size + 2;
        }
        return finish(undefined, { status, headers, body: parseBody(headers, text) });
      }
      if (ended) finish(undefined, { status, headers, body: parseBody(headers, rest.toString()) });
    };
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      tryParse(false);
    });
    socket.on("end", () => tryParse(true));
    socket.on("error", (error) => finish(error));
    socket.setNoDelay(true);
    socket.write(head);
    if (gapMs === 0) for (const part of parts) socket.write(part);
    else void writeSpaced(socket, parts, gapMs);
  });
}

async function writeSpaced(socket: Socket, parts: (string | Buffer)[], gapMs: number): Promise<void> {
  for (const part of parts) {
    await new Promise((resolve) => setTimeout(resolve, gapMs));
    if (socket.destroyed) return;
    socket.write(part);
  }
}

const requestHead = (method: string, target: string, headers: Record<string, string | number>) =>
  `${method} ${target} HTTP/1.1\r\nHost: localhost\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("")}\r\n`;

const chunk = (data: string) => `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`;

describe("request targets (pipeline step 0)", () => {
  const badTargets = [
    "/sessions/../x",
    "/sessions/./x",
    "/sessions/x/..",
    "//sessions",
    "/sessions//x/exec",
    `${BASE}/../sessions`,
    "/sessions/%2e%2e/x",
    "/sessions/%2E%2e",
    "/%2e%2e/sessions",
    "/sessions/a%2fb",
    "/sessions/a%2Fb/exec",
    "/sessions/a%5cb",
    "/sessions/a%5Cb/files",
    "/sessions/a\\b",
    "/sessions\\x",
    "/sessions/%00",
    "/sessions/x/files?path=a\\b",
    "http://127.0.0.1/sessions",
    "*",
  ];

  it("names its version on every answer (X-Sandpool-Version): success, refusal and health", async () => {
    const answers = [
      await fetch(`${harness.url}/healthz`),
      await fetch(`${harness.url}/sessions/${session}`, { headers: { authorization: `Bearer ${token}` } }),
      await fetch(`${harness.url}${BASE}/sessions/${session}`, {
        headers: { authorization: `Bearer ${token}` },
      }),
      await fetch(`${harness.url}/sessions/unknown`),
      await fetch(`${harness.url}/sessions/unknown`, { headers: { authorization: `Bearer ${token}` } }),
      await fetch(`${harness.url}/a//b`),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 401, 404, 400]);
    for (const answer of answers) expect(answer.headers.get("x-sandpool-version")).toBe(SANDPOOL_VERSION);
    expect(SANDPOOL_VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("refuses malformed targets with 400 request.bad_target, before authentication", async () => {
    for (const target of badTargets) {
      for (const authorization of [undefined, `Bearer ${token}`]) {
        const headers: Record<string, string> = authorization ? { authorization } : {};
        const answer = await rawRequest(harness.url, "GET", target, { headers });
        const body = JSON.parse(answer.body);
        assertSchema("Error", body);
        expect({ target, status: answer.status, body }).toMatchObject({
          target,
          status: 400,
          body: { detail: { code: "request.bad_target" } },
        });
      }
    }
  });

  it("refuses NUL and control characters on the request line with 400", async () => {
    for (const target of ["/sessions/a\u0000b", "/sessions/a\u0001b", "/sessions/a\u007fb"]) {
      const answer = await exchange(`GET ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
      expect({ target: JSON.stringify(target), status: answer.status }).toEqual({
        target: JSON.stringify(target),
        status: 400,
      });
    }
  });

  it("leaves dots in the query to the routes (401 without a token, not 400)", async () => {
    const answer = await rawRequest(harness.url, "GET", `/sessions/${session}/files?path=../x`);
    expect(answer.status).toBe(401);
  });
});

describe("JSON bodies (pipeline steps 1 and 5)", () => {
  const auth = () => ({ authorization: `Bearer ${token}` });
  const execPath = () => `/sessions/${session}/exec`;
  const tooBig = JSON.stringify({ padding: "x".repeat(MAX_JSON) });

  function expectError(
    operationId: string,
    answer: { status: number; body: unknown },
    status: number,
    code: string,
  ): void {
    assertContractResponse(operationId, answer.status, answer.body);
    expect({ status: answer.status, body: answer.body }).toMatchObject({
      status,
      body: { detail: { code } },
    });
  }

  it("refuses a body over the cap by Content-Length with 413, before reading it", async () => {
    for (const [operationId, target] of [
      ["CreateSession", "/sessions"],
      ["Execute", execPath()],
    ] as const) {
      const full = await rawRequest(harness.url, "POST", target, {
        headers: { ...auth(), "content-type": "application/json" },
        body: tooBig,
      });
      expectError(operationId, { ...full, body: JSON.parse(full.body) }, 413, "request.too_large");
      // Announce 10 MB, send 100 bytes: the answer must come without the rest.
      const head = requestHead("POST", target, {
        ...auth(),
        "content-type": "application/json",
        "content-length": 10 * 1024 * 1024,
      });
      expectError(operationId, await exchange(head, ["{".padEnd(100, " ")]), 413, "request.too_large");
    }
  });

  it("refuses a chunked body over the cap with 413, before its last chunk", async () => {
    for (const [operationId, target] of [
      ["CreateSession", "/sessions"],
      ["Execute", execPath()],
    ] as const) {
      const head = requestHead("POST", target, {
        ...auth(),
        "content-type": "application/json",
        "transfer-encoding": "chunked",
      });
      const parts = [
        chunk(`{"padding":"${"x".repeat(2000)}`),
        chunk("x".repeat(2000)),
        chunk("x".repeat(2000)),
      ];
      expectError(operationId, await exchange(head, parts), 413, "request.too_large");
    }
  });

  it("accepts a chunked body under the cap", async () => {
    const head = requestHead("POST", execPath(), {
      ...auth(),
      "content-type": "application/json",
      "transfer-encoding": "chunked",
    });
    const payload = JSON.stringify({ tool: "code_execution", input: { code: "print('chunked')" } });
    const answer = await exchange(head, [chunk(payload.slice(0, 20)), chunk(payload.slice(20)), "0\r\n\r\n"]);
    assertContractResponse("Execute", answer.status, answer.body);
    expect(answer.status).toBe(200);
  });

  it("reads a Content-Length body whole, sent with its headers or after them in pieces", async () => {
    const payload = JSON.stringify({ tool: "code_execution", input: { code: "print('a' + 'b')" } });
    const head = requestHead("POST", execPath(), {
      ...auth(),
      "content-type": "application/json",
      "content-length": Buffer.byteLength(payload),
    });
    // One write: the body arrives in the packet of its headers.
    const together = await exchange(`${head}${payload}`);
    // Three, 30 ms apart: the body is still arriving when the handler asks for it.
    const spaced = await exchange(
      head,
      [payload.slice(0, 9), payload.slice(9, 30), payload.slice(30)],
      5_000,
      30,
    );
    for (const answer of [together, spaced]) {
      assertContractResponse("Execute", answer.status, answer.body);
      expect(answer.status).toBe(200);
      const { content } = (answer.body as { result_block: { content: { stdout: string } } }).result_block;
      expect(content.stdout).toBe("ab\n");
    }
  });

  it("answers an unauthenticated oversized body with 401 without reading it", async () => {
    const head = requestHead("POST", "/sessions", {
      "content-type": "application/json",
      "content-length": 1e8,
    });
    expectError("CreateSession", await exchange(head), 401, "auth.missing");
  });

  it("requires application/json (415)", async () => {
    for (const [operationId, target] of [
      ["CreateSession", "/sessions"],
      ["Execute", execPath()],
    ] as const) {
      const body = JSON.stringify({ tool: "code_execution", input: { code: "print(1)" } });
      for (const type of ["text/plain", "application/x-www-form-urlencoded", undefined]) {
        const headers: Record<string, string> = { ...auth(), ...(type ? { "content-type": type } : {}) };
        const answer = await rawRequest(harness.url, "POST", target, { headers, body });
        expectError(
          operationId,
          { ...answer, body: JSON.parse(answer.body) },
          415,
          "request.bad_content_type",
        );
      }
    }
  });

  it("refuses invalid JSON (400 request.bad_json)", async () => {
    for (const [operationId, target] of [
      ["CreateSession", "/sessions"],
      ["Execute", execPath()],
    ] as const) {
      for (const body of ["{", "{'single': 'quotes'}", "undefined"]) {
        const answer = await client.request("POST", target, {
          body,
          headers: { "content-type": "application/json" },
        });
        expectError(operationId, answer, 400, "request.bad_json");
      }
    }
  });

  it("refuses an unknown tool kind (400 tool.unknown)", async () => {
    for (const payload of [{ tool: "rm_rf", input: {} }, { input: { code: "1" } }, { tool: 7 }, null, []]) {
      expectError("Execute", await client.exec(session, payload), 400, "tool.unknown");
    }
  });

  it("refuses malformed input (422 request.malformed)", async () => {
    for (const payload of [
      { tool: "code_execution" },
      { tool: "code_execution", input: { code: 42 } },
      { tool: "code_execution", input: { code: "" } },
      { tool: "bash_code_execution", input: { code: "echo" } },
      { tool: "text_editor_code_execution", input: { command: "view" } },
      { tool: "text_editor_code_execution", input: { command: "delete", path: "a" } },
      { tool: "code_execution", input: { code: "1" }, timeout_seconds: 0 },
    ]) {
      expectError("Execute", await client.exec(session, payload), 422, "request.malformed");
    }
    for (const payload of [{ idle_timeout_seconds: 0 }, { max_lifetime_seconds: "1h" }, []]) {
      expectError("CreateSession", await client.createSession(payload), 422, "request.malformed");
    }
  });
});
