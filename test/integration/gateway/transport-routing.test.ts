/**
 * Where the contract is served and how requests are named: the full flow under a configured
 * base path and at the root, authentication before 404 under the base path too, and the
 * `X-Request-Id` every answer carries (echoed when sane, generated otherwise), errors included.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertSchema } from "../../support/contract.js";
import { ContractClient } from "../../support/contract-client.js";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";
import { rawRequest } from "../../support/raw-http.js";

const BASE = "/v1/sandbox";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let harness: TestGateway;
let token: string;

beforeAll(async () => {
  harness = await startTestGateway({ basePath: BASE });
  token = await harness.token("team-a");
});
afterAll(() => harness?.close());

describe("the contract under a base path", () => {
  for (const prefix of [BASE, ""]) {
    it(`runs create, exec, files and destroy at ${prefix || "/"}`, async () => {
      const client = new ContractClient(`${harness.url}${prefix}`, token);
      const created = await client.createSession();
      expect(created.status).toBe(201);
      const id = (created.body as { session_id: string }).session_id;
      expect((await client.getSession(id)).status).toBe(200);
      expect((await client.run(id, "code_execution", { code: "print(40 + 2)" })).stdout).toBe("42\n");
      expect((await client.putFile(id, "hi", { path: "a.txt" })).status).toBe(201);
      expect((await client.getFile(id, "a.txt")).text).toBe("hi");
      expect((await client.destroy(id)).status).toBe(204);
      expect((await client.getSession(id)).status).toBe(404);
    });
  }

  it("serves a session created under the base path at the root too", async () => {
    const based = new ContractClient(`${harness.url}${BASE}`, token);
    const root = new ContractClient(harness.url, token);
    const id = ((await based.createSession()).body as { session_id: string }).session_id;
    expect((await root.run(id, "bash_code_execution", { command: "echo same" })).stdout).toBe("same\n");
    expect((await root.destroy(id)).status).toBe(204);
    expect((await based.getSession(id)).status).toBe(404);
  });

  it("authenticates unknown paths under the base path before answering 404", async () => {
    for (const path of [`${BASE}/no/such/route`, `${BASE}/healthz`, `${BASE}`, `${BASE}/sessions/x/nope`]) {
      const anonymous = await new ContractClient(harness.url).request("GET", path);
      assertSchema("Error", anonymous.body);
      expect({ path, status: anonymous.status, body: anonymous.body }).toMatchObject({
        status: 401,
        body: { detail: { code: "auth.missing" } },
      });
      const known = await new ContractClient(harness.url, token).request("GET", path);
      assertSchema("Error", known.body);
      expect({ path, status: known.status }).toEqual({ path, status: 404 });
    }
  });

  it("does not serve the contract under a prefix that merely starts like the base path", async () => {
    const answer = await new ContractClient(harness.url, token).request("POST", "/v1/sandboxes/sessions");
    expect(answer.status).toBe(404);
  });
});

describe("X-Request-Id", () => {
  const requestIdOf = async (path: string, headers: Record<string, string>, method = "GET") => {
    const answer = await rawRequest(harness.url, method, path, { headers });
    if (answer.status >= 400) assertSchema("Error", JSON.parse(answer.body));
    return { status: answer.status, id: answer.headers["x-request-id"] };
  };
  const withToken = () => ({ authorization: `Bearer ${token}` });

  it("echoes a sane request id, on successes and errors alike", async () => {
    const sane = ["req-123", "a.b:c-D9", "x".repeat(128)];
    for (const offered of sane) {
      for (const [path, headers, status] of [
        ["/healthz", {}, 200],
        ["/sessions/nope", {}, 401],
        ["/sessions/nope", withToken(), 404],
      ] as const) {
        const answer = await requestIdOf(path, { ...headers, "x-request-id": offered });
        expect({ path, offered, ...answer }).toEqual({ path, offered, status, id: offered });
      }
    }
  });

  it("generates a UUID when none, or an unsafe one, is offered", async () => {
    const unsafe = [undefined, "", "has spaces", "<script>", "a/b", "x".repeat(129), "ünïcode"];
    const seen = new Set<string>();
    for (const offered of unsafe) {
      const headers: Record<string, string> = withToken();
      if (offered !== undefined) headers["x-request-id"] = offered;
      const answer = await requestIdOf("/sessions/nope", headers);
      expect(answer.status).toBe(404);
      expect(answer.id).toMatch(UUID);
      seen.add(answer.id as string);
    }
    expect(seen.size).toBe(unsafe.length);
  });

  async function expectGeneratedId(
    method: string,
    path: string,
    headers: Record<string, string>,
    status: number,
  ) {
    const answer = await rawRequest(harness.url, method, path, {
      headers,
      body: method === "POST" ? "{not json" : undefined,
    });
    expect({ method, path, status: answer.status, id: answer.headers["x-request-id"] }).toEqual({
      method,
      path,
      status,
      id: expect.stringMatching(UUID),
    });
  }

  it("is present on refusals from authentication, routing and parsing", async () => {
    await expectGeneratedId("GET", "/sessions/nope", {}, 401);
    await expectGeneratedId("GET", "/no/such/route", withToken(), 404);
    await expectGeneratedId("POST", "/sessions", { ...withToken(), "content-type": "text/plain" }, 415);
    await expectGeneratedId("POST", "/sessions", { ...withToken(), "content-type": "application/json" }, 400);
  });

  it("is present on refusals of the transport guard (400 request.bad_target)", async () => {
    await expectGeneratedId("GET", "//sessions", {}, 400);
    const answer = await rawRequest(harness.url, "GET", "/sessions/%2e%2e", {
      headers: { "x-request-id": "kept-here" },
    });
    expect({ status: answer.status, id: answer.headers["x-request-id"] }).toEqual({
      status: 400,
      id: "kept-here",
    });
  });
});
