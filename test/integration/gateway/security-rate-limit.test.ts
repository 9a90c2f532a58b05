/**
 * Failed-attempt rate limiting (pipeline step 3, authenticate) through the real gateway.
 * Failures are charged to two sources, the client address and a fingerprint of the presented
 * credential (src/auth/failed-auth-limiter.ts); once either has failed `maxFailures` times in
 * the window, every request it makes is refused with 429 `auth.rate_limited` before
 * verification, a valid token included. Requests come from distinct loopback addresses
 * (127.0.0.0/8 all reach a server on 127.0.0.1) so each case starts from a clean address.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertContractResponse } from "../../support/contract.js";
import { startTestGateway, TEST_IMAGE, type TestGateway } from "../../support/gateway-harness.js";

const MAX_FAILURES = 3;
const WINDOW_MS = 60_000;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: unknown;
}

/** GET `path` from `localAddress`, with `authorization` if given. */
function getFrom(
  baseUrl: string,
  localAddress: string,
  path: string,
  authorization?: string,
): Promise<Answer> {
  const url = new URL(baseUrl);
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, localAddress, method: "GET", path, headers, agent: false },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => {
          const json = (res.headers["content-type"] ?? "").includes("application/json");
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            body: json ? JSON.parse(text) : text,
          });
        });
      },
    );
    req.on("error", reject);
    req.end();
  });
}

let harness: TestGateway;
let good: string;
const sessionPath = "/sessions/no-such-session/files/list";
/** A session route: ListFiles on an id that does not exist answers 404 once authenticated. */
const list = (from: string, authorization?: string) => getFrom(harness.url, from, sessionPath, authorization);

function expectRateLimited(answer: Answer): void {
  assertContractResponse("ListFiles", answer.status, answer.body);
  expect(answer.status).toBe(429);
  expect(answer.body).toMatchObject({ detail: { code: "auth.rate_limited" } });
  const retryAfter = Number(answer.headers["retry-after"]);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(WINDOW_MS / 1000);
}

beforeAll(async () => {
  harness = await startTestGateway({
    pools: [{ name: "default", image: TEST_IMAGE, minIdle: 0, maxTotal: 1 }],
    authFailures: { maxFailures: MAX_FAILURES, windowMs: WINDOW_MS },
  });
  good = `Bearer ${await harness.token("team-a")}`;
});
afterAll(() => harness?.close());

describe("failed-attempt rate limiting", () => {
  it("refuses an address's failures after maxFailures bad attempts, but not its valid tokens", async () => {
    const from = "127.0.0.11";
    expect((await list(from, good)).status).toBe(404); // successes never count
    for (let attempt = 1; attempt <= MAX_FAILURES; attempt++) {
      const answer = await list(from, `Bearer bad-token-${attempt}`);
      expect(answer.status).toBe(401);
    }
    expectRateLimited(await list(from, "Bearer bad-token-4"));
    expectRateLimited(await list(from));
    // Behind a shared proxy every tenant has this address: a valid token still gets in.
    expect((await list(from, good)).status).toBe(404);
  });

  it("counts missing credentials against the address", async () => {
    const from = "127.0.0.12";
    for (let attempt = 1; attempt <= MAX_FAILURES; attempt++) {
      expect((await list(from)).body).toMatchObject({ detail: { code: "auth.missing" } });
    }
    expectRateLimited(await list(from));
  });

  it("leaves other addresses alone", async () => {
    const limited = "127.0.0.13";
    for (let attempt = 1; attempt <= MAX_FAILURES + 1; attempt++)
      await list(limited, `Bearer junk-${attempt}`);
    expectRateLimited(await list(limited, "Bearer more-junk"));
    expect((await list("127.0.0.14", good)).status).toBe(404);
    expect((await list("127.0.0.14", "Bearer fresh-junk")).status).toBe(401);
  });

  it("refuses one bad credential replayed from many addresses", async () => {
    const replayed = "Bearer replayed-from-everywhere";
    for (let attempt = 1; attempt <= MAX_FAILURES; attempt++) {
      expect((await list(`127.0.0.${20 + attempt}`, replayed)).status).toBe(401);
    }
    // A fresh address: the credential's fingerprint is what is limited now...
    expectRateLimited(await list("127.0.0.30", replayed));
    // ...and that address, never failed itself, still gets in with a valid token.
    expect((await list("127.0.0.30", good)).status).toBe(404);
  });

  it("keeps health, metrics and the transport guard answering a limited address", async () => {
    const from = "127.0.0.40";
    for (let attempt = 1; attempt <= MAX_FAILURES; attempt++) await list(from, `Bearer nope-${attempt}`);
    expectRateLimited(await list(from, "Bearer nope-again"));
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      expect({ path, status: (await getFrom(harness.url, from, path)).status }).toEqual({
        path,
        status: 200,
      });
    }
    const badTarget = await getFrom(harness.url, from, "//sessions", good);
    expect(badTarget.status).toBe(400);
    expect(badTarget.body).toMatchObject({ detail: { code: "request.bad_target" } });
  });

  it("counts rate-limited refusals in the metrics by code", async () => {
    const metrics = await getFrom(harness.url, "127.0.0.50", "/metrics");
    expect(metrics.text).toMatch(/auth\.rate_limited/);
  });
});
