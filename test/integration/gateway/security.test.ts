/**
 * Pipeline step 3 (authenticate) through the real gateway: every contract route, and every
 * unknown path or method next to them, refuses a missing or bad bearer credential with 401
 * before any 404 or 405, while health and metrics stay open. Failed attempts are not rate
 * limited here (the limit is raised out of reach); security-rate-limit.test.ts covers the
 * limiter.
 */
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { type JWTPayload, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertContractResponse, assertSchema } from "../../support/contract.js";
import {
  startTestGateway,
  TEST_IMAGE,
  TEST_SECRET,
  type TestGateway,
} from "../../support/gateway-harness.js";

const NO_SUCH_SESSION = "no-such-session-0123456789";
const OTHER_SECRET = "another-secret-of-at-least-thirty-two-bytes";
/** No warm sandboxes: these suites refuse almost everything, and the few sessions cold-start. */
const COLD_POOL = [{ name: "default", image: TEST_IMAGE, minIdle: 0, maxTotal: 2 }];

interface Route {
  name: string;
  method: string;
  path: string;
  /** The contract operation whose schemas the answer is checked against; none for unknown routes. */
  operationId?: string;
  body?: () => { body: RequestInit["body"]; headers: Record<string, string> };
}

const jsonBody = (value: unknown) => () => ({
  body: JSON.stringify(value),
  headers: { "content-type": "application/json" },
});

const multipartBody = () => {
  const form = new FormData();
  form.set("path", "upload.txt");
  form.set("file", new Blob(["hello"]), "upload.txt");
  return { body: form, headers: {} };
};

const session = `/sessions/${NO_SUCH_SESSION}`;
const ROUTES: Route[] = [
  {
    name: "CreateSession",
    method: "POST",
    path: "/sessions",
    operationId: "CreateSession",
    body: jsonBody({}),
  },
  { name: "GetSession", method: "GET", path: session },
  { name: "DestroySession", method: "DELETE", path: session, operationId: "DestroySession" },
  {
    name: "Execute",
    method: "POST",
    path: `${session}/exec`,
    operationId: "Execute",
    body: jsonBody({ tool: "code_execution", input: { code: "print(1)" } }),
  },
  { name: "ListFiles", method: "GET", path: `${session}/files/list`, operationId: "ListFiles" },
  { name: "GetFile", method: "GET", path: `${session}/files?path=a.txt`, operationId: "GetFile" },
  { name: "PutFile", method: "POST", path: `${session}/files`, operationId: "PutFile", body: multipartBody },
  { name: "an unknown path", method: "GET", path: "/no/such/route" },
  { name: "a wrong method", method: "PUT", path: "/sessions", body: jsonBody({}) },
];

interface Answer {
  status: number;
  text: string;
  body: unknown;
  headers: Headers;
}

async function send(baseUrl: string, route: Route, authorization?: string): Promise<Answer> {
  const payload = route.body?.();
  const headers: Record<string, string> = { ...payload?.headers };
  if (authorization !== undefined) headers.authorization = authorization;
  const res = await fetch(`${baseUrl}${route.path}`, { method: route.method, headers, body: payload?.body });
  const text = await res.text();
  const body = (res.headers.get("content-type") ?? "").includes("application/json") ? JSON.parse(text) : text;
  if (route.operationId) assertContractResponse(route.operationId, res.status, body);
  else if (res.status >= 400) assertSchema("Error", body);
  return { status: res.status, text, body, headers: res.headers };
}

const now = () => Math.floor(Date.now() / 1000);
const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

function hs256(claims: JWTPayload, secret = TEST_SECRET): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .sign(new TextEncoder().encode(secret));
}

/** An unsigned token, built by hand: jose refuses to make one. */
function unsigned(claims: JWTPayload): string {
  return `${base64url({ alg: "none", typ: "JWT" })}.${base64url(claims)}.`;
}

const goodClaims = (): JWTPayload => ({ workspace_id: "team-a", iat: now(), exp: now() + 600 });

let harness: TestGateway;
/** `told`: a genuine token whose holder is told what is wrong (not one of the forged ones). */
let badCredentials: { name: string; authorization: string | undefined; code: string; told?: RegExp }[];
beforeAll(async () => {
  harness = await startTestGateway({
    pools: COLD_POOL,
    authFailures: { maxFailures: 1_000_000, windowMs: 60_000 },
  });
  const { exp: _exp, ...withoutExp } = goodClaims();
  const { workspace_id: _ws, ...withoutWorkspace } = goodClaims();
  badCredentials = [
    { name: "no Authorization header", authorization: undefined, code: "auth.missing" },
    { name: "the Basic scheme", authorization: "Basic dGVhbS1hOnBhc3N3b3Jk", code: "auth.invalid" },
    { name: "a garbage token", authorization: "Bearer not.a.jwt", code: "auth.invalid" },
    { name: "a bare Bearer", authorization: "Bearer", code: "auth.invalid" },
    {
      name: "a token signed with another secret",
      authorization: `Bearer ${await hs256(goodClaims(), OTHER_SECRET)}`,
      code: "auth.invalid",
    },
    {
      name: "a token expired beyond the clock tolerance",
      authorization: `Bearer ${await hs256({ ...goodClaims(), iat: now() - 600, exp: now() - 120 })}`,
      code: "auth.expired",
      told: /^the bearer token expired at \d{4}-\d\d-\d\dT[\d:.]+Z: get a new one$/,
    },
    { name: "a token without exp", authorization: `Bearer ${await hs256(withoutExp)}`, code: "auth.invalid" },
    { name: "an alg:none token", authorization: `Bearer ${unsigned(goodClaims())}`, code: "auth.invalid" },
    {
      name: "a token without the workspace claim",
      authorization: `Bearer ${await hs256(withoutWorkspace)}`,
      code: "auth.invalid",
      told: /^the token names no workspace \(its 'workspace_id' claim is missing or not a workspace id\)$/,
    },
    {
      name: "a token with an empty workspace claim",
      authorization: `Bearer ${await hs256({ ...goodClaims(), workspace_id: "" })}`,
      code: "auth.invalid",
      told: /^the token names no workspace/,
    },
  ];
});
afterAll(() => harness?.close());

describe("authentication on every route", () => {
  for (const route of ROUTES) {
    it(`${route.name} (${route.method} ${route.path}) refuses every missing or bad credential with 401`, async () => {
      const invalidTexts = new Set<string>();
      for (const credential of badCredentials) {
        const answer = await send(harness.url, route, credential.authorization);
        expect({ credential: credential.name, status: answer.status, body: answer.body }).toMatchObject({
          status: 401,
          body: {
            detail: { code: credential.code, ...(credential.told ? { message: credential.told } : {}) },
          },
        });
        if (credential.code === "auth.invalid" && !credential.told) invalidTexts.add(answer.text);
      }
      // No oracle: whichever check stopped a forged token, the answer is the same bytes (only a
      // genuine token's holder is told it expired or names no workspace).
      expect(invalidTexts.size).toBe(1);
    });
  }

  it("answers 401 with a WWW-Authenticate: Bearer challenge (RFC 9110 section 11.6.1)", async () => {
    const answer = await send(harness.url, ROUTES[0]!);
    expect(answer.status).toBe(401);
    expect(answer.headers.get("www-authenticate") ?? "").toMatch(/^Bearer\b/i);
  });

  it("accepts a token expired within the clock tolerance, and the scheme in any case", async () => {
    const recent = await hs256({ ...goodClaims(), exp: now() - 5 });
    const getSession = ROUTES[1]!;
    expect((await send(harness.url, getSession, `Bearer ${recent}`)).status).toBe(404);
    const fresh = await harness.token("team-a");
    expect((await send(harness.url, getSession, `bearer ${fresh}`)).status).toBe(404);
  });
});

describe("401 comes before 404 and 405", () => {
  const unknown: Route = { name: "unknown", method: "GET", path: "/definitely/not/here" };

  it("answers an unknown path 401 without a token and 404 with a valid one", async () => {
    expect((await send(harness.url, unknown)).body).toMatchObject({ detail: { code: "auth.missing" } });
    const answer = await send(harness.url, unknown, `Bearer ${await harness.token("team-a")}`);
    expect(answer.status).toBe(404);
    expect(answer.body).toMatchObject({ detail: { code: "request.not_found" } });
  });

  it("answers a wrong method 401 without a token and 405 with a valid one", async () => {
    const wrongMethod = ROUTES.at(-1)!;
    expect((await send(harness.url, wrongMethod)).status).toBe(401);
    const answer = await send(harness.url, wrongMethod, `Bearer ${await harness.token("team-a")}`);
    expect(answer.status).toBe(405);
    expect(answer.body).toMatchObject({ detail: { code: "request.method_not_allowed" } });
  });

  it("serves health, readiness and metrics without a token", async () => {
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      const res = await fetch(`${harness.url}${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      await res.text();
    }
  });
});

describe("HS/RS algorithm confusion", () => {
  let rsa: TestGateway;
  let publicPem: string;
  let privateKey: KeyObject;
  beforeAll(async () => {
    const pair = generateKeyPairSync("rsa", { modulusLength: 2048 });
    publicPem = pair.publicKey.export({ type: "spki", format: "pem" }).toString();
    privateKey = pair.privateKey;
    rsa = await startTestGateway({
      auth: { jwtPublicKey: publicPem },
      pools: COLD_POOL,
      authFailures: { maxFailures: 1_000_000, windowMs: 60_000 },
    });
  });
  afterAll(() => rsa?.close());

  const createSession = ROUTES[0]!;

  it("refuses HS256 tokens keyed with the public key's PEM text", async () => {
    for (const key of [publicPem, publicPem.trim()]) {
      const forged = await hs256(goodClaims(), key);
      const answer = await send(rsa.url, createSession, `Bearer ${forged}`);
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ detail: { code: "auth.invalid" } });
    }
  });

  it("refuses alg:none and tokens of the HS-keyed deployment", async () => {
    expect((await send(rsa.url, createSession, `Bearer ${unsigned(goodClaims())}`)).status).toBe(401);
    expect((await send(rsa.url, createSession, `Bearer ${await rsa.token("team-a")}`)).status).toBe(401);
  });

  it("accepts a proper RS256 token", async () => {
    const token = await new SignJWT(goodClaims())
      .setProtectedHeader({ alg: "RS256", typ: "JWT" })
      .sign(privateKey);
    const answer = await send(rsa.url, createSession, `Bearer ${token}`);
    expect(answer.status).toBe(201);
    const id = (answer.body as { session_id: string }).session_id;
    const destroy: Route = { name: "destroy", method: "DELETE", path: `/sessions/${id}` };
    expect((await send(rsa.url, destroy, `Bearer ${token}`)).status).toBe(204);
  });
});

describe("a token already verified (the verified-token cache)", () => {
  let strict: TestGateway;
  beforeAll(async () => {
    strict = await startTestGateway({
      auth: { jwtSecret: TEST_SECRET, clockToleranceSeconds: 0 },
      pools: COLD_POOL,
      authFailures: { maxFailures: 1_000_000, windowMs: 60_000 },
    });
  });
  afterAll(() => strict?.close());

  it("is refused once it expires, though it was accepted (and cached) before", async () => {
    const getSession = ROUTES[1]!;
    const expiresAt = now() + 2;
    const token = await hs256({ ...goodClaims(), exp: expiresAt });
    expect((await send(strict.url, getSession, `Bearer ${token}`)).status).toBe(404);
    expect((await send(strict.url, getSession, `Bearer ${token}`)).status).toBe(404);
    await new Promise((resolve) => setTimeout(resolve, (expiresAt + 1) * 1000 - Date.now()));
    const answer = await send(strict.url, getSession, `Bearer ${token}`);
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ detail: { code: "auth.expired" } });
  });

  it("does not let a forged signature ride on the same claims", async () => {
    const getSession = ROUTES[1]!;
    const claims = goodClaims();
    const good = await hs256(claims);
    expect((await send(strict.url, getSession, `Bearer ${good}`)).status).toBe(404);
    const forged = await hs256(claims, OTHER_SECRET);
    expect((await send(strict.url, getSession, `Bearer ${forged}`)).status).toBe(401);
  });
});
