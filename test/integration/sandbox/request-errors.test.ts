import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertContractResponse } from "../../support/contract.js";
import { rawRequest } from "../../support/raw-http.js";
import { newSession, startTestSandbox, type TestSandbox } from "../../support/sandbox-server.js";

let sandbox: TestSandbox;
let id: string;
beforeAll(async () => {
  sandbox = await startTestSandbox({ maxJsonBodyBytes: 4096 });
  id = await newSession(sandbox.client);
});
afterAll(() => sandbox.close());

const exec = (payload: unknown) => sandbox.client.exec(id, payload);
const code = (answer: { body: unknown }) => (answer.body as { detail: { code: string } }).detail.code;

describe("Execute input validation", () => {
  it.each([[{ tool: "rm_rf", input: {} }], [{ input: { code: "1" } }], [{ tool: 5, input: {} }], [[]]])(
    "refuses an unknown or missing tool kind %j with 400",
    async (payload) => {
      const answer = await exec(payload);
      expect(answer.status).toBe(400);
      expect(code(answer)).toBe("tool.unknown");
    },
  );

  it.each([
    [{ tool: "code_execution" }],
    [{ tool: "code_execution", input: {} }],
    [{ tool: "code_execution", input: { code: "" } }],
    [{ tool: "code_execution", input: { code: "1" }, timeout_seconds: 0 }],
    [{ tool: "code_execution", input: { code: "1" }, timeout_seconds: "5" }],
    [{ tool: "bash_code_execution", input: { cmd: "ls" } }],
    [{ tool: "text_editor_code_execution", input: { command: "create", path: "a" } }],
    [{ tool: "text_editor_code_execution", input: { command: "str_replace", path: "a", new_str: "x" } }],
    [{ tool: "text_editor_code_execution", input: { command: "insert", path: "a", new_str: "x" } }],
    [{ tool: "text_editor_code_execution", input: { command: "delete", path: "a" } }],
    [{ tool: "text_editor_code_execution", input: { command: "view" } }],
    [{ tool: "text_editor_code_execution", input: { command: "view", path: "a", view_range: [1] } }],
  ])("refuses malformed input %j with 422", async (payload) => {
    const answer = await exec(payload);
    expect(answer.status).toBe(422);
    expect(code(answer)).toBe("request.malformed");
  });

  it("passes unknown request fields without complaint", async () => {
    const answer = await exec({
      tool: "code_execution",
      input: { code: "print(1)", lang: "py" },
      trace: true,
    });
    expect(answer.status).toBe(200);
  });

  it("clamps timeout_seconds above the ceiling instead of refusing", async () => {
    const answer = await exec({
      tool: "code_execution",
      input: { code: "print('ok')" },
      timeout_seconds: 1_000_000,
    });
    expect(answer.status).toBe(200);
  });

  it("requires a JSON content type (415) and valid JSON (400)", async () => {
    const typed = await sandbox.client.request("POST", `/sessions/${id}/exec`, {
      body: JSON.stringify({ tool: "code_execution", input: { code: "1" } }),
      headers: { "content-type": "text/plain" },
    });
    expect(typed.status).toBe(415);
    assertContractResponse("Execute", typed.status, typed.body);
    const broken = await sandbox.client.request("POST", `/sessions/${id}/exec`, {
      body: "{not json",
      headers: { "content-type": "application/json" },
    });
    expect(broken.status).toBe(400);
  });
});

describe("transport", () => {
  it("refuses a body over the cap by Content-Length and when chunked", async () => {
    const big = JSON.stringify({ tool: "code_execution", input: { code: `#${"x".repeat(10_000)}` } });
    const declared = await rawRequest(sandbox.server.url, "POST", `/sessions/${id}/exec`, {
      headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(big)) },
      body: big,
    });
    expect(declared.status).toBe(413);
    const chunked = await rawRequest(sandbox.server.url, "POST", `/sessions/${id}/exec`, {
      headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
      chunks: [big.slice(0, 5000), big.slice(5000)],
    });
    expect(chunked.status).toBe(413);
    assertContractResponse("Execute", chunked.status, JSON.parse(chunked.body));
  });

  it.each([
    "/sessions/../health",
    "/sessions/./x",
    "//sessions",
    "/sessions/%2e%2e/health",
    "/sessions/a%2fb/exec",
    "/sessions/a%5cb",
    "/sessions/a\\b",
    "/sessions/%00",
  ])("refuses the request target %s with 400", async (target) => {
    const answer = await rawRequest(sandbox.server.url, "GET", target);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({
      detail: { code: "request.bad_target", message: "malformed request target" },
    });
  });

  it("answers unknown routes with a contract-shaped 404", async () => {
    const answer = await sandbox.client.request("GET", "/nope");
    expect(answer.status).toBe(404);
    expect(code(answer)).toBe("request.not_found");
  });
});
