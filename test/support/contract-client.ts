/**
 * A small contract-v1 client for tests. Every JSON answer is checked against the contract
 * schema of its operation before the test sees it, so no test can forget to.
 */
import type { Agent } from "undici";
import { isUnixEndpoint, sandboxOrigin } from "../../src/forward/sandbox-agent.js";
import { assertContractResponse, assertSchema } from "./contract.js";

/**
 * Sandboxes on a Unix socket (`unix:/path`) are reached through the gateway's own agent.
 * Loaded only then: once the undici package is loaded, Node's global fetch uses its dispatcher,
 * whose checks differ from the built-in one's (tests send deliberately odd headers).
 */
let unixAgent: Agent | undefined;
async function fetchOverUnixSocket(url: string, init: RequestInit): Promise<Response> {
  const [{ fetch }, { createSandboxAgent }] = await Promise.all([
    import("undici"),
    import("../../src/forward/sandbox-agent.js"),
  ]);
  unixAgent ??= createSandboxAgent();
  return (await fetch(url, { ...(init as object), dispatcher: unixAgent })) as unknown as Response;
}

export interface Answer<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export class ContractClient {
  constructor(
    readonly baseUrl: string,
    private readonly token?: string,
  ) {}

  withToken(token: string | undefined): ContractClient {
    return new ContractClient(this.baseUrl, token);
  }

  async request(
    method: string,
    path: string,
    init: { body?: RequestInit["body"]; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { ...init.headers };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const res = isUnixEndpoint(this.baseUrl)
      ? await fetchOverUnixSocket(`${sandboxOrigin(this.baseUrl)}${path}`, {
          method,
          body: init.body,
          headers,
        })
      : await fetch(`${this.baseUrl}${path}`, { method, body: init.body, headers });
    const text = await res.text();
    let body: unknown = text;
    if ((res.headers.get("content-type") ?? "").includes("application/json") && text.length > 0)
      body = JSON.parse(text);
    return { status: res.status, body, headers: res.headers, text };
  }

  private async json(operationId: string, method: string, path: string, payload?: unknown): Promise<Answer> {
    const answer = await this.request(method, path, {
      body: payload === undefined ? undefined : JSON.stringify(payload),
      headers: payload === undefined ? {} : { "content-type": "application/json" },
    });
    assertContractResponse(operationId, answer.status, answer.body);
    return answer;
  }

  createSession(payload?: unknown): Promise<Answer> {
    return this.json("CreateSession", "POST", "/sessions", payload);
  }

  async getSession(id: string): Promise<Answer> {
    const answer = await this.request("GET", `/sessions/${encodeURIComponent(id)}`);
    assertSchema(answer.status === 200 ? "SessionHandle" : "Error", answer.body);
    return answer;
  }

  exec(id: string, payload: unknown): Promise<Answer> {
    return this.json("Execute", "POST", `/sessions/${encodeURIComponent(id)}/exec`, payload);
  }

  destroy(id: string): Promise<Answer> {
    return this.json("DestroySession", "DELETE", `/sessions/${encodeURIComponent(id)}`);
  }

  listFiles(id: string, path?: string, extra = ""): Promise<Answer> {
    const query = path === undefined ? "" : `?path=${encodeURIComponent(path)}`;
    return this.json("ListFiles", "GET", `/sessions/${encodeURIComponent(id)}/files/list${query}${extra}`);
  }

  async getFile(id: string, path: string): Promise<Answer> {
    const answer = await this.request(
      "GET",
      `/sessions/${encodeURIComponent(id)}/files?path=${encodeURIComponent(path)}`,
    );
    if (answer.status !== 200) assertContractResponse("GetFile", answer.status, answer.body);
    return answer;
  }

  async putFile(
    id: string,
    content: Uint8Array | string,
    options: { path?: string; filename?: string } = {},
  ) {
    // Over a Unix socket the request goes through undici's fetch, which sends only its own
    // FormData as multipart (Node's global one would go as the text "[object FormData]").
    const Form = isUnixEndpoint(this.baseUrl)
      ? ((await import("undici")).FormData as typeof FormData)
      : FormData;
    const form = new Form();
    if (options.path !== undefined) form.set("path", options.path);
    form.set("file", new Blob([content]), options.filename ?? "upload.bin");
    const answer = await this.request("POST", `/sessions/${encodeURIComponent(id)}/files`, { body: form });
    assertContractResponse("PutFile", answer.status, answer.body);
    return answer;
  }

  /** Runs one tool call and returns the result block's payload (stdout, stderr, return_code). */
  async run(id: string, tool: string, input: unknown, extra: Record<string, unknown> = {}) {
    const answer = await this.exec(id, { tool, input, ...extra });
    if (answer.status !== 200) throw new Error(`exec failed: ${answer.status} ${answer.text}`);
    const body = answer.body as {
      result_block: { content: { stdout: string; stderr: string; return_code: number } };
    };
    return body.result_block.content;
  }
}
