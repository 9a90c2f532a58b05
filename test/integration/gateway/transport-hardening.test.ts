/**
 * Transport hardening through the real gateway: slow headers and slow bodies are cut off
 * (and a slow but steady body is not), requests waiting for authentication are bounded
 * (503 `request.busy`, health and metrics still answer), Host and Origin are checked (403),
 * GetFile answers are never sniffed and always attachments, and one workspace's calls in
 * flight are bounded (429 `quota.calls_in_flight`) without touching another workspace.
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertContractResponse, assertSchema } from "../../support/contract.js";
import type { ContractClient } from "../../support/contract-client.js";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";
import { type RawAnswer, rawRequest } from "../../support/raw-http.js";
import { waitFor } from "../../support/wait-for.js";

const HEADER_TIMEOUT_MS = 600;
const BODY_TIMEOUT_MS = 500;
const CALLS_PER_WORKSPACE = 2;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function json(answer: RawAnswer): unknown {
  return answer.body ? JSON.parse(answer.body) : undefined;
}

interface SocketOutcome {
  /** Milliseconds from the first write until the gateway closed the connection. */
  closedAfterMs: number;
  received: string;
}

/** Opens a bare socket to the gateway, runs `write` on it, and waits for the gateway to close it. */
function untilClosed(
  url: string,
  write: (socket: Socket) => Promise<void> | void,
  limitMs = 10_000,
): Promise<SocketOutcome> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let received = "";
    let started = 0;
    const limit = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the gateway kept the connection open for ${limitMs} ms`));
    }, limitMs);
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      received += chunk;
    });
    socket.on("error", () => undefined); // a reset is a close too
    socket.on("close", () => {
      clearTimeout(limit);
      resolve({ closedAfterMs: Date.now() - started, received });
    });
    socket.on("connect", () => {
      started = Date.now();
      void Promise.resolve(write(socket)).catch(reject);
    });
  });
}

describe("with a gateway of tight transport limits", () => {
  let harness: TestGateway;
  let client: ContractClient;
  let token: string;
  let session: string;

  beforeAll(async () => {
    harness = await startTestGateway({
      limits: {
        headerReadTimeoutMs: HEADER_TIMEOUT_MS,
        bodyReadTimeoutMs: BODY_TIMEOUT_MS,
        maxCallsInFlightPerWorkspace: CALLS_PER_WORKSPACE,
      },
      http: { allowedHosts: ["sandpool.test", ".cluster.test"], allowedOrigins: ["https://console.test"] },
    });
    client = await harness.client("team-a");
    token = await harness.token("team-a");
    const created = await client.createSession();
    expect(created.status).toBe(201);
    session = (created.body as { session_id: string }).session_id;
  });
  afterAll(() => harness?.close());

  describe("slow clients", () => {
    it("cuts off a client whose header block does not arrive in time", async () => {
      const outcome = await untilClosed(harness.url, (socket) => {
        socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"); // and never the blank line
      });
      expect(outcome.closedAfterMs).toBeGreaterThanOrEqual(HEADER_TIMEOUT_MS - 50);
      expect(outcome.closedAfterMs).toBeLessThan(HEADER_TIMEOUT_MS + 3_000);
      expect(outcome.received).not.toContain("200 OK");
    });

    it("cuts off a client that stops sending its body", async () => {
      const outcome = await untilClosed(harness.url, (socket) => {
        socket.write(
          "POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
            `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{`,
        );
      });
      expect(outcome.closedAfterMs).toBeGreaterThanOrEqual(BODY_TIMEOUT_MS - 50);
      expect(outcome.closedAfterMs).toBeLessThan(BODY_TIMEOUT_MS + 3_000);
      expect(outcome.received).toBe(""); // no session was created for half a body
    });

    it("keeps a body that is slow but never silent for a whole timeout", async () => {
      const body = `{${" ".repeat(8)}}`;
      const outcome = await untilClosed(harness.url, async (socket) => {
        socket.write(
          "POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
            `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
        );
        // Ten bytes over ~2 s, each gap well under the timeout: longer in total than it.
        for (const char of body) {
          await sleep(BODY_TIMEOUT_MS / 2);
          socket.write(char);
        }
      });
      expect(outcome.closedAfterMs).toBeGreaterThan(BODY_TIMEOUT_MS * 2);
      const [head, payload] = outcome.received.split("\r\n\r\n");
      expect(head).toMatch(/^HTTP\/1\.1 201 /);
      const handle = JSON.parse(payload!) as { session_id: string };
      assertContractResponse("CreateSession", 201, handle);
      expect((await client.destroy(handle.session_id)).status).toBe(204);
    });

    it("does not cut off a long call once its body has arrived", async () => {
      const answer = await client.exec(session, {
        tool: "code_execution",
        input: { code: `import time\ntime.sleep(${(BODY_TIMEOUT_MS * 3) / 1000})\nprint('late')` },
      });
      expect(answer.status).toBe(200);
      expect(answer.text).toContain("late");
    });
  });

  describe("Host and Origin", () => {
    const withToken = () => ({ authorization: `Bearer ${token}` });

    it.each(["evil.example", "evil.example:8080", "localhost.evil.example"])(
      "refuses Host %s with 403 request.host_denied, health checks included",
      async (host) => {
        for (const target of ["/healthz", `/sessions/${session}`]) {
          const answer = await rawRequest(harness.url, "GET", target, { headers: { host, ...withToken() } });
          expect(answer.status).toBe(403);
          const body = json(answer);
          assertSchema("Error", body);
          expect(body).toMatchObject({ detail: { code: "request.host_denied" } });
        }
      },
    );

    it.each([
      "127.0.0.1",
      "localhost:8080",
      "[::1]:1",
      "sandpool.test",
      "sandpool.test:443",
      "gw.ns.cluster.test",
      "10.1.2.3:8080",
    ])("answers Host %s", async (host) => {
      const answer = await rawRequest(harness.url, "GET", `/sessions/${session}`, {
        headers: { host, ...withToken() },
      });
      expect(answer.status).toBe(200);
      assertSchema("SessionHandle", json(answer));
    });

    it("refuses a foreign Origin with 403 request.origin_denied, before authentication", async () => {
      for (const origin of ["https://evil.example", "null", "http://console.test"]) {
        const answer = await rawRequest(harness.url, "POST", "/sessions", {
          headers: { origin, "content-type": "application/json" },
          body: "{}",
        });
        expect(answer.status).toBe(403);
        const body = json(answer);
        assertContractResponse("CreateSession", 403, body);
        expect(body).toMatchObject({ detail: { code: "request.origin_denied" } });
      }
    });

    it("refuses a call carrying two Authorization headers (401), even when each alone is valid", async () => {
      const other = await harness.token("team-b");
      for (const pair of [
        [token, other],
        [token, token],
      ]) {
        const outcome = await untilClosed(harness.url, (socket) => {
          socket.write(
            `GET /sessions/${session}/files HTTP/1.1\r\nHost: sandpool.test\r\n` +
              `Authorization: Bearer ${pair[0]}\r\nauthorization: Bearer ${pair[1]}\r\nConnection: close\r\n\r\n`,
          );
        });
        const [head, payload] = outcome.received.split("\r\n\r\n");
        expect(head).toMatch(/^HTTP\/1\.1 401 /);
        const body = JSON.parse(payload!);
        assertContractResponse("ListFiles", 401, body);
        expect(body).toMatchObject({ detail: { code: "auth.invalid" } });
      }
    });

    it("lets loopback and configured origins, and requests without Origin, through", async () => {
      const variants: Record<string, string>[] = [
        { origin: "http://localhost:5173" },
        { origin: "http://127.0.0.1:3000" },
        { origin: "https://console.test" },
        {},
      ];
      for (const headers of variants) {
        const answer = await rawRequest(harness.url, "GET", `/sessions/${session}`, {
          headers: { ...headers, ...withToken() },
        });
        expect(answer.status).toBe(200);
        assertSchema("SessionHandle", json(answer));
      }
    });

    it("judges every Host alike past the verdicts it remembers: asked again, and after hundreds of others", async () => {
      const askAs = (host: string) =>
        rawRequest(harness.url, "GET", "/healthz", { headers: { host } }).then((answer) => answer.status);
      expect(await askAs("evil.example")).toBe(403);
      expect(await askAs("evil.example")).toBe(403);
      for (let i = 0; i < 300; i++) expect(await askAs(`127.0.0.${i % 250}:${1000 + i}`)).toBe(200);
      expect(await askAs("evil.example")).toBe(403);
      expect(await askAs("localhost:1")).toBe(200);
    });

    it("counts the refusals by their code", async () => {
      const metrics = await rawRequest(harness.url, "GET", "/metrics");
      expect(metrics.body).toMatch(/sandpool_rejections_total\{code="request\.host_denied"\} [1-9]/);
      expect(metrics.body).toMatch(/sandpool_rejections_total\{code="request\.origin_denied"\} [1-9]/);
    });
  });

  describe("GetFile", () => {
    it.each([
      ["page.html", `filename="page.html"; filename*=UTF-8''page.html`],
      ['dir/résumé "v2".svg', `filename="r_sum_ _v2_.svg"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22v2%22.svg`],
    ])("answers %s as a never-sniffed attachment", async (path, disposition) => {
      const put = await client.putFile(session, "<script>alert(1)</script>", { path });
      expect(put.status).toBe(201);
      const answer = await client.getFile(session, path);
      expect(answer.status).toBe(200);
      expect(answer.text).toBe("<script>alert(1)</script>");
      expect(answer.headers.get("x-content-type-options")).toBe("nosniff");
      expect(answer.headers.get("content-disposition")).toBe(`attachment; ${disposition}`);
    });

    it("marks its error answers nosniff too", async () => {
      const answer = await client.getFile(session, "missing.html");
      expect(answer.status).toBe(404);
      expect(answer.headers.get("x-content-type-options")).toBe("nosniff");
      expect(answer.headers.get("content-disposition")).toBeNull();
    });
  });

  describe("calls in flight per workspace", () => {
    it(`refuses a workspace's call past ${CALLS_PER_WORKSPACE} in flight with 429, and no other workspace's`, async () => {
      const sessions: string[] = [];
      for (let i = 0; i < CALLS_PER_WORKSPACE; i++) {
        const created = await client.createSession();
        expect(created.status).toBe(201);
        sessions.push((created.body as { session_id: string }).session_id);
      }
      const slow = sessions.map((id) =>
        client.exec(id, {
          tool: "code_execution",
          input: { code: "import time\ntime.sleep(3)\nprint('held')" },
        }),
      );
      // Both calls are in flight once both sessions are busy in the store.
      await waitFor(
        async () => {
          const leases = await harness.store.listLeases();
          return sessions.every((id) => leases.find((lease) => lease.sessionId === id)?.activeCalls);
        },
        10_000,
        "both slow calls in flight",
      );

      const refused = await client.exec(session, { tool: "code_execution", input: { code: "print(1)" } });
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(refused.body).toMatchObject({ detail: { code: "quota.calls_in_flight" } });
      const handle = await client.getSession(session);
      expect(handle.status).toBe(429);

      const other = await harness.client("team-b");
      const created = await other.createSession();
      expect(created.status).toBe(201);

      for (const answer of await Promise.all(slow)) {
        expect(answer.status).toBe(200);
        expect(answer.text).toContain("held");
      }
      expect((await client.getSession(session)).status).toBe(200);
      for (const id of sessions) expect((await client.destroy(id)).status).toBe(204);
      await other.destroy((created.body as { session_id: string }).session_id);
    });
  });
});

describe("requests waiting for authentication", () => {
  const MAX_UNAUTHENTICATED = 2;
  let harness: TestGateway;
  let jwks: Server;
  let jwksUrl: string;
  /** Token-key fetches held open while `holding`: authentication waits on them. */
  const held: ServerResponse[] = [];
  let holding = true;
  /** A JWT whose key must be fetched from the JWKS (its signature is never reached). */
  const token = [
    Buffer.from(JSON.stringify({ alg: "RS256", kid: "k1", typ: "JWT" })).toString("base64url"),
    Buffer.from(JSON.stringify({ workspace_id: "team-a", exp: 4_102_444_800 })).toString("base64url"),
    "c2ln",
  ].join(".");

  beforeAll(async () => {
    jwks = createServer((_req, res) => {
      if (holding) held.push(res);
      else res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => jwks.listen(0, "127.0.0.1", resolve));
    const { port } = jwks.address() as { port: number };
    jwksUrl = `http://127.0.0.1:${port}/jwks.json`;
    harness = await startTestGateway({
      auth: { jwksUrl, jwksTimeoutMs: 20_000, jwksCooldownMs: 1 },
      limits: { maxUnauthenticatedRequests: MAX_UNAUTHENTICATED },
      pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdle: 0, maxTotal: 1 }],
    });
  });
  afterAll(async () => {
    for (const res of held) res.destroy();
    await harness?.close();
    jwks?.closeAllConnections();
    await new Promise((resolve) => jwks?.close(resolve));
  });

  const createSession = () =>
    rawRequest(harness.url, "POST", "/sessions", {
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: "{}",
    });

  it("answers 503 request.busy past the bound, /metrics too, while health still answers", async () => {
    const waiting = Array.from({ length: MAX_UNAUTHENTICATED }, () => createSession());
    await waitFor(() => held.length >= 1, 10_000, "the gateway to fetch the JWKS");
    await sleep(200); // the second request reaches the same fetch

    const busy = await createSession();
    expect(busy.status).toBe(503);
    expect(busy.headers["retry-after"]).toBe("1");
    const body = json(busy);
    assertContractResponse("CreateSession", 503, body);
    expect(body).toMatchObject({ detail: { code: "request.busy" } });
    const admin = await rawRequest(harness.url, "GET", "/admin/v1/pools", {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(admin.status).toBe(503);

    expect((await rawRequest(harness.url, "GET", "/healthz")).status).toBe(200);
    expect((await rawRequest(harness.url, "GET", "/readyz")).status).toBe(200);
    // Anyone can ask for /metrics: it is counted like any other unauthenticated request.
    expect((await rawRequest(harness.url, "GET", "/metrics")).status).toBe(503);

    // The key fetch fails: the waiting requests are refused (401) and leave the count.
    holding = false;
    for (const res of held.splice(0)) res.writeHead(500).end();
    for (const answer of await Promise.all(waiting)) expect(answer.status).toBe(401);
    for (let i = 0; i <= MAX_UNAUTHENTICATED; i++) expect((await createSession()).status).toBe(401);
    const metrics = await rawRequest(harness.url, "GET", "/metrics");
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/sandpool_rejections_total\{code="request\.busy"\} [1-9]/);
  });
});
