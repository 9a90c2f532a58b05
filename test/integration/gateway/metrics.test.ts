/**
 * The operational endpoints: Prometheus metrics (open by default, behind a bearer token with
 * `metrics.token`, and always under the bound on unauthenticated requests) reflecting what the
 * gateway did — requests by route, warm leases, pool gauges, refusals by code, execution
 * time — and the liveness and readiness probes.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import type { Answer } from "../../support/contract-client.js";
import { startTestGateway, TEST_SECRET, type TestGateway } from "../../support/gateway-harness.js";
import { rawRequest } from "../../support/raw-http.js";
import { waitFor } from "../../support/wait-for.js";

let harness: TestGateway;
beforeAll(async () => {
  harness = await startTestGateway({
    pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdle: 1, maxTotal: 6 }],
  });
});
afterAll(() => harness.close());

const freshWorkspace = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

function sessionIdOf(answer: Answer): string {
  expect(answer.status, answer.text).toBe(201);
  return (answer.body as { session_id: string }).session_id;
}

async function scrape(): Promise<{ text: string; contentType: string | null }> {
  const res = await fetch(`${harness.url}/metrics`);
  expect(res.status).toBe(200);
  return { text: await res.text(), contentType: res.headers.get("content-type") };
}

/** The value of one sample, its labels given in the order prom-client writes them. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function waitForIdle(count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await harness.store.listIdle("default")).length < count) {
    if (Date.now() > deadline) throw new Error(`the pool never had ${count} idle`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("GET /metrics", () => {
  it("answers without a credential in the Prometheus text format", async () => {
    const { text, contentType } = await scrape();
    expect(contentType).toContain("text/plain");
    expect(text).toContain("# TYPE sandpool_http_requests_total counter");
    expect(text).toContain("# HELP sandpool_lease_duration_seconds");
    // A bad credential does not matter either: metrics are open.
    const withBadToken = await fetch(`${harness.url}/metrics`, { headers: { authorization: "Bearer nope" } });
    expect(withBadToken.status).toBe(200);
  });

  it("exports the event loop's delay as a histogram, a stall included", async () => {
    const before = (await scrape()).text;
    const stalled = (text: string) =>
      sample(text, "sandpool_event_loop_delay_seconds_count")! -
      sample(text, 'sandpool_event_loop_delay_seconds_bucket{le="0.25"}')!;
    const until = Date.now() + 300;
    while (Date.now() < until) {
      // A synchronous stretch: the loop runs nothing else meanwhile.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const after = (await scrape()).text;
    expect(after).toContain("# TYPE sandpool_event_loop_delay_seconds histogram");
    expect(stalled(after) - stalled(before)).toBe(1);
    // The loop is sampled all along: a few samples a tenth of a second.
    const count = (text: string) => sample(text, "sandpool_event_loop_delay_seconds_count")!;
    expect(count(after) - count(before)).toBeGreaterThanOrEqual(3);
  });

  it("counts requests by route, method and status", async () => {
    const client = await harness.client(freshWorkspace("routes"));
    const id = sessionIdOf(await client.createSession());
    expect((await client.getSession(id)).status).toBe(200);
    expect((await client.listFiles(id)).status).toBe(200);
    expect((await client.destroy(id)).status).toBe(204);
    expect((await client.withToken(undefined).createSession()).status).toBe(401);

    const { text } = await scrape();
    expect(text).toMatch(
      /^sandpool_http_requests_total\{route="CreateSession",method="POST",status="201"\} \d+/m,
    );
    expect(text).toMatch(
      /^sandpool_http_requests_total\{route="GetSession",method="GET",status="200"\} \d+/m,
    );
    expect(text).toMatch(/^sandpool_http_requests_total\{route="ListFiles",method="GET",status="200"\} \d+/m);
    expect(text).toMatch(
      /^sandpool_http_requests_total\{route="DestroySession",method="DELETE",status="204"\} \d+/m,
    );
    expect(text).toMatch(/^sandpool_http_requests_total\{route="[^"]+",method="POST",status="401"\} \d+/m);
    expect(text).toMatch(/^sandpool_http_request_duration_seconds_count\{route="CreateSession"\} \d+/m);
  });

  it("times warm leases", async () => {
    await waitForIdle(1);
    const before = sample(
      (await scrape()).text,
      'sandpool_lease_duration_seconds_count{pool="default",start="warm"}',
    );
    const client = await harness.client(freshWorkspace("warm"));
    const id = sessionIdOf(await client.createSession());
    const { text } = await scrape();
    const after = sample(text, 'sandpool_lease_duration_seconds_count{pool="default",start="warm"}');
    expect(after).toBe((before ?? 0) + 1);
    expect(text).toMatch(
      /^sandpool_lease_duration_seconds_bucket\{le="[^"]+",pool="default",start="warm"\} \d+/m,
    );
    await client.destroy(id);
  });

  it("reports the pool's sandboxes by state", async () => {
    await waitForIdle(1);
    const client = await harness.client(freshWorkspace("gauges"));
    const id = sessionIdOf(await client.createSession());
    await waitForIdle(1);
    // Warm-up may make a sandbox ready (or trim one) between a store read and the scrape: the
    // gauge is right when it lies between store reads either side of it.
    const idleBefore = (await harness.store.listIdle("default")).length;
    const { text } = await scrape();
    const idleAfter = (await harness.store.listIdle("default")).length;
    const idleGauge = sample(text, 'sandpool_pool_sandboxes{pool="default",state="idle"}');
    expect(idleGauge).toBeGreaterThanOrEqual(Math.min(idleBefore, idleAfter));
    expect(idleGauge).toBeLessThanOrEqual(Math.max(idleBefore, idleAfter));
    expect(sample(text, 'sandpool_pool_sandboxes{pool="default",state="leased"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'sandpool_pool_sandboxes{pool="default",state="starting"}')).toBeGreaterThanOrEqual(
      0,
    );
    await client.destroy(id);
  });

  it("counts refusals by error code", async () => {
    const workspace = freshWorkspace("refused");
    await harness.gateway.policyRepository.put(workspace, { maxConcurrentSessions: 1 }, "metrics-test");
    harness.gateway.services.policies.invalidate(workspace);
    const series = 'sandpool_rejections_total{code="quota.concurrent_sessions"}';
    const before = sample((await scrape()).text, series) ?? 0;
    const client = await harness.client(workspace);
    const id = sessionIdOf(await client.createSession());
    const refused = await client.createSession();
    expect(refused.status).toBe(429);
    expect(sample((await scrape()).text, series)).toBe(before + 1);
    await client.destroy(id);
  });

  it("counts failed authentications by reason, never by credential", async () => {
    const reasons = [
      "missing",
      "malformed",
      "bad_signature",
      "expired",
      "no_workspace",
      "not_admin",
      "unknown_key",
    ];
    const series = (reason: string) => `sandpool_auth_failures_total{reason="${reason}"}`;
    const before = await scrape();
    const forged = await mintToken({ secret: "not-the-gateway-secret-but-32-bytes-long", workspace: "w" });
    const expired = await mintToken({ secret: TEST_SECRET, workspace: "w", ttlSeconds: -60 });
    const admin = await mintToken({ secret: TEST_SECRET, admin: true });
    const attempts: [string, string | undefined][] = [
      ["/sessions/x", undefined],
      ["/sessions/x", "Basic dXNlcjpwYXNz"],
      ["/sessions/x", `Bearer ${forged}`],
      ["/sessions/x", `Bearer ${expired}`],
      ["/sessions/x", `Bearer ${admin}`],
      ["/admin/v1/pools", `Bearer ${await harness.token("w")}`],
      ["/sessions/x", `Bearer sp_0123456789ab_${"x".repeat(43)}`],
    ];
    for (const [path, authorization] of attempts) {
      const res = await fetch(`${harness.url}${path}`, { headers: authorization ? { authorization } : {} });
      expect([401, 403]).toContain(res.status);
    }
    const { text } = await scrape();
    for (const reason of reasons)
      expect(sample(text, series(reason)), reason).toBe((sample(before.text, series(reason)) ?? 0) + 1);
    // The label set is fixed: no token (nor any part of one) becomes a label value.
    for (const line of text.split("\n").filter((l) => l.startsWith("sandpool_auth_failures_total{")))
      expect(line).toMatch(/^sandpool_auth_failures_total\{reason="[a-z_]+"\} \d+$/);
    expect(text).not.toContain(forged.slice(0, 20));
  });

  it("records execution time by tool", async () => {
    const client = await harness.client(freshWorkspace("exec"));
    const id = sessionIdOf(await client.createSession());
    await client.run(id, "code_execution", { code: "import time\ntime.sleep(0.2)" });
    await client.run(id, "bash_code_execution", { command: "true" });
    const { text } = await scrape();
    expect(
      sample(text, 'sandpool_exec_duration_seconds_count{tool="code_execution"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'sandpool_exec_duration_seconds_sum{tool="code_execution"}')).toBeGreaterThanOrEqual(
      0.2,
    );
    expect(
      sample(text, 'sandpool_exec_duration_seconds_count{tool="bash_code_execution"}'),
    ).toBeGreaterThanOrEqual(1);
    await client.destroy(id);
  });

  it("times each call's begin in the store, once per call, apart from the sandbox's time", async () => {
    const before = await scrape();
    const client = await harness.client(freshWorkspace("begin"));
    const id = sessionIdOf(await client.createSession());
    await client.run(id, "code_execution", { code: "import time\ntime.sleep(0.2)" });
    await client.run(id, "bash_code_execution", { command: "true" });
    await client.destroy(id);
    const { text } = await scrape();
    const count = "sandpool_call_begin_duration_seconds_count";
    const sum = "sandpool_call_begin_duration_seconds_sum";
    expect(sample(text, count)! - (sample(before.text, count) ?? 0)).toBe(2);
    const seconds = sample(text, sum)! - (sample(before.text, sum) ?? 0);
    // The begins alone: the 0.2 s the sandbox slept is not in them.
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan(0.2);
  });
});

describe("probes", () => {
  it("answers /healthz and /readyz with 200 and no credential", async () => {
    const health = await fetch(`${harness.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
    const ready = await fetch(`${harness.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready" });
  });
});

describe("GET /metrics with metrics.token", () => {
  const METRICS_TOKEN = "a-metrics-token-of-at-least-32-bytes-0123";
  let guarded: TestGateway;
  let introspection: Server;
  /** Introspection answers held back while set: calls with opaque tokens wait unauthenticated. */
  const held: ServerResponse[] = [];
  let scratch: string;

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), "sandpool-metrics-token-"));
    introspection = createServer((req, res) => {
      req.resume();
      held.push(res);
    });
    await new Promise<void>((resolve) => introspection.listen(0, "127.0.0.1", resolve));
    guarded = await startTestGateway({
      auth: {
        jwtSecret: TEST_SECRET,
        introspection: {
          url: `http://127.0.0.1:${(introspection.address() as AddressInfo).port}/introspect`,
          clientId: "sandpool",
          clientSecret: "secret",
          anyAudience: true,
          timeoutMs: 20_000,
          refusalCacheSeconds: 0,
        },
      },
      limits: { maxUnauthenticatedRequests: 1 },
      metrics: { token: METRICS_TOKEN },
      pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdle: 0, maxTotal: 1 }],
    });
  });
  afterAll(async () => {
    for (const res of held) res.destroy();
    await guarded?.close();
    introspection?.closeAllConnections();
    await new Promise((resolve) => introspection?.close(resolve));
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  const scrapeWith = (authorization?: string) =>
    rawRequest(guarded.url, "GET", "/metrics", { headers: authorization ? { authorization } : {} });

  it("answers 401 without the token, with another token, or with a token of the API", async () => {
    const apiToken = await guarded.token("team-a");
    for (const authorization of [
      undefined,
      "Bearer not-the-metrics-token",
      `Bearer ${METRICS_TOKEN}x`,
      `Bearer ${METRICS_TOKEN.slice(0, -1)}`,
      `Basic ${Buffer.from(`prometheus:${METRICS_TOKEN}`).toString("base64")}`,
      `Bearer ${apiToken}`,
    ]) {
      const answer = await scrapeWith(authorization);
      expect(answer.status, authorization).toBe(401);
      expect(answer.headers["www-authenticate"]).toMatch(/^Bearer/);
      expect(answer.body).not.toContain("sandpool_http_requests_total");
    }
    const missing = JSON.parse((await scrapeWith()).body) as { detail: { code: string } };
    expect(missing.detail.code).toBe("auth.missing");
  });

  it("answers the Prometheus text with the token, whatever the scheme's case", async () => {
    for (const scheme of ["Bearer", "bearer"]) {
      const answer = await scrapeWith(`${scheme} ${METRICS_TOKEN}`);
      expect(answer.status).toBe(200);
      expect(answer.body).toContain("# TYPE sandpool_http_requests_total counter");
    }
    // Health stays open: probes carry no token.
    expect((await rawRequest(guarded.url, "GET", "/healthz")).status).toBe(200);
  });

  it("takes the token from a file named by metrics.tokenFile, as a mounted secret is", async () => {
    const file = path.join(scratch, "metrics-token");
    await writeFile(file, `${METRICS_TOKEN}-from-a-file\n`);
    const fromFile = await startTestGateway({
      metrics: { tokenFile: file },
      pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdle: 0, maxTotal: 1 }],
    });
    try {
      const scrape = (authorization: string) =>
        rawRequest(fromFile.url, "GET", "/metrics", { headers: { authorization } });
      expect((await scrape(`Bearer ${METRICS_TOKEN}-from-a-file`)).status).toBe(200);
      expect((await scrape(`Bearer ${METRICS_TOKEN}`)).status).toBe(401);
    } finally {
      await fromFile.close();
    }
  });

  it("counts /metrics under the bound on unauthenticated requests, the token's scrape too", async () => {
    // One call waits for the introspection endpoint: the bound (1) is full.
    const waiting = rawRequest(guarded.url, "GET", "/sessions/x", {
      headers: { authorization: "Bearer an-opaque-platform-token" },
    });
    await waitFor(() => held.length >= 1, 10_000, "the gateway to ask the introspection endpoint");
    for (const authorization of [undefined, `Bearer ${METRICS_TOKEN}`]) {
      const busy = await scrapeWith(authorization);
      expect(busy.status, authorization).toBe(503);
      expect(JSON.parse(busy.body)).toMatchObject({ detail: { code: "request.busy" } });
      expect(busy.headers["retry-after"]).toBe("1");
    }
    expect((await rawRequest(guarded.url, "GET", "/healthz")).status).toBe(200);
    // The endpoint answers: the call is refused and leaves the count; scraping works again.
    for (const res of held.splice(0)) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"active":false}');
    }
    expect((await waiting).status).toBe(401);
    const after = await scrapeWith(`Bearer ${METRICS_TOKEN}`);
    expect(after.status).toBe(200);
    expect(after.body).toMatch(/sandpool_rejections_total\{code="request\.busy"\} [1-9]/);
  });
});
