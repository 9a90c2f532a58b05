/**
 * A gateway with `auth.introspection` pointing at an endpoint this test serves on 127.0.0.1:
 * opaque tokens authenticate as the workspace the endpoint names, inactive ones and active
 * ones issued for another audience are 401,
 * an endpoint that is down is 503 `auth.introspection_unavailable` (never a default tenant),
 * and JWTs and sandpool keys keep working without ever being sent to the endpoint.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContractClient } from "../../support/contract-client.js";
import { startTestGateway, TEST_SECRET, type TestGateway } from "../../support/gateway-harness.js";

let harness: TestGateway;
let endpoint: Server;
let up = true;
const tokensSeen: string[] = [];

beforeAll(async () => {
  endpoint = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      const token = new URLSearchParams(body).get("token") ?? "";
      tokensSeen.push(token);
      if (!up) {
        res.writeHead(502).end();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          token.startsWith("platform-")
            ? { active: true, tenant: "team-p", aud: "sandpool" }
            : // Active, the same workspace, but issued for another of the server's services.
              token.startsWith("billing-")
              ? { active: true, tenant: "team-p", aud: "billing" }
              : { active: false },
        ),
      );
    });
  });
  await new Promise<void>((resolve) => endpoint.listen(0, "127.0.0.1", resolve));
  harness = await startTestGateway({
    auth: {
      jwtSecret: TEST_SECRET,
      introspection: {
        url: `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/introspect`,
        clientId: "sandpool",
        clientSecret: "secret",
        workspaceField: "tenant",
        audience: "sandpool",
        cacheSeconds: 0,
        refusalCacheSeconds: 0,
      },
    },
    pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdle: 0, maxTotal: 2 }],
  });
});
afterAll(async () => {
  await harness?.close();
  endpoint?.closeAllConnections();
  await new Promise((resolve) => endpoint?.close(resolve));
});

const codeOf = (body: unknown) => (body as { detail: { code: string } }).detail.code;

describe("introspection on the gateway", () => {
  it("an active opaque token reaches its workspace's sessions only", async () => {
    up = true;
    const platform = new ContractClient(harness.url, "platform-user-1");
    const created = await platform.createSession();
    expect(created.status, created.text).toBe(201);
    const session = (created.body as { session_id: string }).session_id;
    expect((await (await harness.client("team-p")).getSession(session)).status).toBe(200);
    expect((await (await harness.client("team-q")).getSession(session)).status).toBe(404);
    await platform.request("DELETE", `/sessions/${session}`);
  });

  it("an inactive token is 401, and the endpoint down is 503 auth.introspection_unavailable", async () => {
    up = true;
    const inactive = await new ContractClient(harness.url, "revoked-token").getSession("x");
    expect(inactive.status).toBe(401);
    expect(codeOf(inactive.body)).toBe("auth.invalid");
    up = false;
    const down = await new ContractClient(harness.url, "platform-user-2").getSession("x");
    expect(down.status).toBe(503);
    expect(codeOf(down.body)).toBe("auth.introspection_unavailable");
    up = true;
  });

  it("an active token the server issued for another audience is 401, counted as introspection_refused", async () => {
    up = true;
    const refused = await new ContractClient(harness.url, "billing-user-1").getSession("x");
    expect(refused.status).toBe(401);
    expect(codeOf(refused.body)).toBe("auth.invalid");
    const metrics = await (await fetch(`${harness.url}/metrics`)).text();
    expect(metrics).toMatch(/sandpool_auth_failures_total\{reason="introspection_refused"\} [1-9]/);
  });

  it("an endpoint outage is not counted as failed attempts: the token works once it is back", async () => {
    up = false;
    const client = new ContractClient(harness.url, "platform-user-3");
    for (let i = 0; i < 25; i++) expect((await client.getSession("x")).status).toBe(503);
    up = true;
    expect((await client.getSession("x")).status).toBe(404); // authenticated; no such session
  });

  it("JWTs and sandpool keys are never sent to the introspection endpoint", async () => {
    tokensSeen.length = 0;
    const jwt = await harness.token("team-j");
    expect((await new ContractClient(harness.url, jwt).getSession("x")).status).toBe(404);
    const created = await harness.gateway.services.apiKeyAdmin!.create({ workspace: "team-k" }, "test");
    expect((await new ContractClient(harness.url, created.key).getSession("x")).status).toBe(404);
    expect(tokensSeen).toEqual([]);
  });
});
