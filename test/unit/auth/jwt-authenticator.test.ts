import { createHmac, generateKeyPairSync } from "node:crypto";
import {
  base64url,
  exportJWK,
  exportPKCS8,
  exportSPKI,
  generateKeyPair,
  importPKCS8,
  type JWTPayload,
  SignJWT,
} from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { type AuthConfigInput, authConfigSchema } from "../../../src/auth/auth-config.js";
import { JwtAuthenticator } from "../../../src/auth/jwt-authenticator.js";
import { SandpoolError } from "../../../src/contract/error-codes.js";

const secret = "a-test-secret-that-is-at-least-32-bytes-long";
const secretBytes = new TextEncoder().encode(secret);
const now = () => Math.floor(Date.now() / 1000);

function authenticator(input: AuthConfigInput): JwtAuthenticator {
  return new JwtAuthenticator(authConfigSchema.parse(input));
}

type SigningKey = Parameters<SignJWT["sign"]>[0];

async function sign(
  claims: JWTPayload,
  key: SigningKey = secretBytes,
  alg = "HS256",
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT({ workspace_id: "ws-1", exp: now() + 3600, ...claims })
    .setProtectedHeader({ alg, typ: "JWT", ...header })
    .sign(key);
}

/**
 * Expect a refusal with the given code and, for auth.invalid, the one generic message unless
 * the refusal is one the holder of a genuine token is told about (`message`).
 */
async function expectRefused(
  promise: Promise<unknown>,
  code: "auth.missing" | "auth.invalid" | "auth.expired" = "auth.invalid",
  message?: string | RegExp,
) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SandpoolError);
  expect((error as SandpoolError).code).toBe(code);
  expect((error as SandpoolError).status).toBe(401);
  if (message !== undefined) expect((error as SandpoolError).message).toMatch(message);
  else if (code === "auth.invalid") expect((error as SandpoolError).message).toBe("invalid bearer token");
}

/** A genuine token whose workspace claim is unusable: told so, still 401 auth.invalid. */
const expectNoWorkspace = (promise: Promise<unknown>, claim = "workspace_id") =>
  expectRefused(
    promise,
    "auth.invalid",
    `the token names no workspace (its '${claim}' claim is missing or not a workspace id)`,
  );

describe("JwtAuthenticator with an HS256 secret", () => {
  const auth = authenticator({ jwtSecret: secret });

  it("accepts a valid token and derives the principal from its claims", async () => {
    const exp = now() + 600;
    const token = await sign({ workspace_id: "acme.prod", sub: "user-7", jti: "tok-1", exp });
    await expect(auth.authenticate(`Bearer ${token}`)).resolves.toEqual({
      workspace: "acme.prod",
      subject: "user-7",
      tokenId: "tok-1",
      expiresAt: exp,
    });
  });

  it("treats the scheme case-insensitively and leaves sub and jti optional", async () => {
    const token = await sign({});
    const principal = await auth.authenticate(`bearer  ${token}`);
    expect(principal).toMatchObject({ workspace: "ws-1", subject: undefined, tokenId: undefined });
  });

  it("answers auth.missing without a header, or with an empty one", async () => {
    await expectRefused(auth.authenticate(undefined), "auth.missing");
    await expectRefused(auth.authenticate("   "), "auth.missing");
  });

  it("refuses other schemes and malformed headers", async () => {
    const token = await sign({});
    await expectRefused(auth.authenticate(`Basic ${Buffer.from("u:p").toString("base64")}`));
    await expectRefused(auth.authenticate(`Token ${token}`));
    await expectRefused(auth.authenticate("Bearer"));
    await expectRefused(auth.authenticate(`Bearer ${token} extra`));
    await expectRefused(auth.authenticate(`Bearer ${"a".repeat(20_000)}`));
  });

  it("refuses garbage tokens", async () => {
    for (const garbage of ["abc", "a.b.c", "....", "eyJhbGciOiJIUzI1NiJ9.e30", "e30.e30.e30"]) {
      await expectRefused(auth.authenticate(`Bearer ${garbage}`));
    }
  });

  it("refuses a token signed with another secret", async () => {
    const token = await sign({}, new TextEncoder().encode("another-secret-that-is-32-bytes-long!!"));
    await expectRefused(auth.authenticate(`Bearer ${token}`));
  });

  it("refuses a token whose payload was altered after signing", async () => {
    const [header, , signature] = (await sign({ workspace_id: "ws-1" })).split(".");
    const forged = base64url.encode(JSON.stringify({ workspace_id: "ws-2", exp: now() + 3600 }));
    await expectRefused(auth.authenticate(`Bearer ${header}.${forged}.${signature}`));
  });

  it("refuses an expired token (auth.expired, saying when) and one without exp", async () => {
    const exp = now() - 3600;
    await expectRefused(
      auth.authenticate(`Bearer ${await sign({ exp })}`),
      "auth.expired",
      `the bearer token expired at ${new Date(exp * 1000).toISOString()}: get a new one`,
    );
    const noExp = await new SignJWT({ workspace_id: "ws-1" })
      .setProtectedHeader({ alg: "HS256" })
      .sign(secretBytes);
    await expectRefused(auth.authenticate(`Bearer ${noExp}`));
  });

  it("tells a forged or altered expired token nothing: the generic auth.invalid", async () => {
    const otherKey = new TextEncoder().encode("another-secret-of-at-least-32-bytes!!");
    const forged = await new SignJWT({ workspace_id: "ws-1", exp: now() - 3600 })
      .setProtectedHeader({ alg: "HS256" })
      .sign(otherKey);
    await expectRefused(auth.authenticate(`Bearer ${forged}`));
    const [header, , signature] = (await sign({ exp: now() + 3600 })).split(".");
    const altered = base64url.encode(JSON.stringify({ workspace_id: "ws-1", exp: now() - 3600 }));
    await expectRefused(auth.authenticate(`Bearer ${header}.${altered}.${signature}`));
  });

  it("tells a token issued longer ago than the maximum age it is expired", async () => {
    const aged = authenticator({ jwtSecret: secret, maxTokenAgeSeconds: 60 });
    await expectRefused(
      aged.authenticate(`Bearer ${await sign({ iat: now() - 600 })}`),
      "auth.expired",
      "the bearer token was issued too long ago for this gateway: get a new one",
    );
  });

  it("refuses a token that is not valid yet", async () => {
    await expectRefused(auth.authenticate(`Bearer ${await sign({ nbf: now() + 600 })}`));
  });

  it("honours the clock tolerance", async () => {
    const recentlyExpired = await sign({ exp: now() - 10 });
    await expect(auth.authenticate(`Bearer ${recentlyExpired}`)).resolves.toMatchObject({
      workspace: "ws-1",
    });
    const strict = authenticator({ jwtSecret: secret, clockToleranceSeconds: 0 });
    await expectRefused(strict.authenticate(`Bearer ${recentlyExpired}`), "auth.expired");
    const almostValid = await sign({ nbf: now() + 10 });
    await expect(auth.authenticate(`Bearer ${almostValid}`)).resolves.toMatchObject({ workspace: "ws-1" });
    await expectRefused(strict.authenticate(`Bearer ${almostValid}`));
  });

  it("refuses an unsigned (alg none) token", async () => {
    const header = base64url.encode(JSON.stringify({ alg: "none", typ: "JWT" }));
    const payload = base64url.encode(JSON.stringify({ workspace_id: "ws-1", exp: now() + 3600 }));
    await expectRefused(auth.authenticate(`Bearer ${header}.${payload}.`));
    await expectRefused(auth.authenticate(`Bearer ${header}.${payload}`));
  });

  it("refuses an algorithm outside the allow-list, even with the right secret", async () => {
    const hs512 = await sign({}, secretBytes, "HS512");
    await expectRefused(auth.authenticate(`Bearer ${hs512}`));
    const widened = authenticator({ jwtSecret: secret, algorithms: ["HS256", "HS512"] });
    await expect(widened.authenticate(`Bearer ${hs512}`)).resolves.toMatchObject({ workspace: "ws-1" });
  });

  it.each([
    ["missing", {}],
    ["empty", { workspace_id: "" }],
    ["a number", { workspace_id: 42 }],
    ["an object", { workspace_id: { id: "ws-1" } }],
    ["starting with a dot", { workspace_id: ".hidden" }],
    ["containing a slash", { workspace_id: "a/b" }],
    ["containing a space", { workspace_id: "a b" }],
    ["too long", { workspace_id: "w".repeat(129) }],
  ])("refuses a workspace claim that is %s", async (_, claims) => {
    const token = await new SignJWT({ exp: now() + 3600, ...claims })
      .setProtectedHeader({ alg: "HS256" })
      .sign(secretBytes);
    await expectNoWorkspace(auth.authenticate(`Bearer ${token}`));
  });

  it("accepts a workspace id of 128 characters", async () => {
    const token = await sign({ workspace_id: `W${"w".repeat(127)}` });
    await expect(auth.authenticate(`Bearer ${token}`)).resolves.toMatchObject({
      workspace: `W${"w".repeat(127)}`,
    });
  });
});

describe("JwtAuthenticator claim checks", () => {
  it("checks the issuer and the audience when configured", async () => {
    const auth = authenticator({ jwtSecret: secret, issuer: "https://idp.example", audience: "sandpool" });
    const good = await sign({ iss: "https://idp.example", aud: "sandpool" });
    await expect(auth.authenticate(`Bearer ${good}`)).resolves.toMatchObject({ workspace: "ws-1" });
    const audienceList = await sign({ iss: "https://idp.example", aud: ["other", "sandpool"] });
    await expect(auth.authenticate(`Bearer ${audienceList}`)).resolves.toMatchObject({ workspace: "ws-1" });
    await expectRefused(
      auth.authenticate(`Bearer ${await sign({ iss: "https://evil.example", aud: "sandpool" })}`),
    );
    await expectRefused(
      auth.authenticate(`Bearer ${await sign({ iss: "https://idp.example", aud: "other" })}`),
    );
    await expectRefused(auth.authenticate(`Bearer ${await sign({ aud: "sandpool" })}`));
    await expectRefused(auth.authenticate(`Bearer ${await sign({ iss: "https://idp.example" })}`));
  });

  it("reads a custom workspace claim, literal or by dotted path", async () => {
    const literal = authenticator({ jwtSecret: secret, workspaceClaim: "tenant" });
    await expect(literal.authenticate(`Bearer ${await sign({ tenant: "t-1" })}`)).resolves.toMatchObject({
      workspace: "t-1",
    });
    // The default claim is ignored once another is configured.
    await expectNoWorkspace(literal.authenticate(`Bearer ${await sign({ workspace_id: "ws-1" })}`), "tenant");

    const dotted = authenticator({
      jwtSecret: secret,
      workspaceClaim: "https://example.com/claims.workspace",
    });
    const nested = await sign({ "https://example.com/claims": { workspace: "nested-ws" } });
    await expect(dotted.authenticate(`Bearer ${nested}`)).resolves.toMatchObject({ workspace: "nested-ws" });
    const flat = await sign({
      "https://example.com/claims.workspace": "literal-ws",
      "https://example.com/claims": { workspace: "nested-ws" },
    });
    await expect(dotted.authenticate(`Bearer ${flat}`)).resolves.toMatchObject({ workspace: "literal-ws" });
    await expectNoWorkspace(
      dotted.authenticate(`Bearer ${await sign({ "https://example.com/claims": "x" })}`),
      "https://example.com/claims.workspace",
    );
  });

  it("does not resolve a dotted path through inherited properties", async () => {
    const auth = authenticator({ jwtSecret: secret, workspaceClaim: "constructor.name" });
    await expectNoWorkspace(auth.authenticate(`Bearer ${await sign({})}`), "constructor.name");
  });
});

describe("JwtAuthenticator with a public key", () => {
  let rsa: Awaited<ReturnType<typeof generateKeyPair>>;
  let rsaPem: string;
  // A WebCrypto private key is bound to one algorithm: the same RSA key, imported for PS256.
  let rsaPss: SigningKey;
  let ec: Awaited<ReturnType<typeof generateKeyPair>>;
  let ecJwk: string;

  beforeAll(async () => {
    rsa = await generateKeyPair("RS256", { extractable: true });
    rsaPem = await exportSPKI(rsa.publicKey);
    rsaPss = await importPKCS8(await exportPKCS8(rsa.privateKey), "PS256");
    ec = await generateKeyPair("ES256", { extractable: true });
    ecJwk = JSON.stringify(await exportJWK(ec.publicKey));
  });

  it("verifies RS256 tokens against a PEM SPKI key", async () => {
    const auth = authenticator({ jwtPublicKey: rsaPem });
    const token = await sign({ sub: "svc" }, rsa.privateKey, "RS256");
    await expect(auth.authenticate(`Bearer ${token}`)).resolves.toMatchObject({
      workspace: "ws-1",
      subject: "svc",
    });
  });

  it("verifies PS256 with the same RSA key (a second, separate import)", async () => {
    const auth = authenticator({ jwtPublicKey: rsaPem });
    const ps = await sign({}, rsaPss, "PS256");
    const rs = await sign({}, rsa.privateKey, "RS256");
    await expect(auth.authenticate(`Bearer ${ps}`)).resolves.toMatchObject({ workspace: "ws-1" });
    await expect(auth.authenticate(`Bearer ${rs}`)).resolves.toMatchObject({ workspace: "ws-1" });
  });

  it("refuses a token signed by another RSA key", async () => {
    const other = await generateKeyPair("RS256");
    const auth = authenticator({ jwtPublicKey: rsaPem });
    await expectRefused(auth.authenticate(`Bearer ${await sign({}, other.privateKey, "RS256")}`));
  });

  it("verifies ES256 tokens against a JWK given as a JSON string", async () => {
    const auth = authenticator({ jwtPublicKey: ecJwk });
    const token = await sign({}, ec.privateKey, "ES256");
    await expect(auth.authenticate(`Bearer ${token}`)).resolves.toMatchObject({ workspace: "ws-1" });
    await expectRefused(auth.authenticate(`Bearer ${await sign({}, rsa.privateKey, "RS256")}`));
  });

  it("refuses HS256 tokens keyed with the public key's PEM bytes (HS/RS confusion)", async () => {
    const auth = authenticator({ jwtPublicKey: rsaPem });
    const forged = await sign({}, new TextEncoder().encode(rsaPem), "HS256");
    await expectRefused(auth.authenticate(`Bearer ${forged}`));
    // The same attack crafted by hand, with the HMAC over the exact PEM text jose would see.
    const header = base64url.encode(JSON.stringify({ alg: "HS256", typ: "JWT" }));
    const payload = base64url.encode(JSON.stringify({ workspace_id: "ws-1", exp: now() + 3600 }));
    const mac = createHmac("sha256", rsaPem.trim()).update(`${header}.${payload}`).digest("base64url");
    await expectRefused(auth.authenticate(`Bearer ${header}.${payload}.${mac}`));
  });

  it("verifies EdDSA tokens against an Ed25519 PEM key", async () => {
    const ed = await generateKeyPair("Ed25519", { extractable: true });
    const auth = authenticator({ jwtPublicKey: await exportSPKI(ed.publicKey) });
    await expect(
      auth.authenticate(`Bearer ${await sign({}, ed.privateKey, "EdDSA")}`),
    ).resolves.toMatchObject({
      workspace: "ws-1",
    });
  });

  it("refuses an algorithm outside a narrowed allow-list", async () => {
    const auth = authenticator({ jwtPublicKey: rsaPem, algorithms: ["PS256"] });
    await expectRefused(auth.authenticate(`Bearer ${await sign({}, rsa.privateKey, "RS256")}`));
    await expect(auth.authenticate(`Bearer ${await sign({}, rsaPss, "PS256")}`)).resolves.toMatchObject({
      workspace: "ws-1",
    });
  });

  it("keeps the refusal reason in the cause, without the token or its claims", async () => {
    const auth = authenticator({ jwtPublicKey: rsaPem });
    const token = await sign({ exp: now() - 3600 }, rsa.privateKey, "RS256");
    const error = (await auth.authenticate(`Bearer ${token}`).catch((e: unknown) => e)) as SandpoolError;
    expect(error.cause).toBeInstanceOf(Error);
    expect((error.cause as Error).message).toBe("ERR_JWT_EXPIRED");
    expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain(token.split(".")[1]);
  });

  it("re-validates a hand-built config, so the HS/RS guard cannot be bypassed", () => {
    const parsed = authConfigSchema.parse({ jwtPublicKey: rsaPem });
    expect(() => new JwtAuthenticator({ ...parsed, algorithms: ["HS256"] })).toThrow(/HMAC/);
  });
});

describe("authConfigSchema", () => {
  let rsaPem: string;
  let ecJwk: Record<string, unknown>;
  let edPem: string;

  beforeAll(async () => {
    rsaPem = await exportSPKI((await generateKeyPair("RS256", { extractable: true })).publicKey);
    ecJwk = { ...(await exportJWK((await generateKeyPair("ES384", { extractable: true })).publicKey)) };
    edPem = await exportSPKI((await generateKeyPair("Ed25519", { extractable: true })).publicKey);
  });

  it("fills the defaults and derives the allow-list from the key source", () => {
    const hs = authConfigSchema.parse({ jwtSecret: secret });
    expect(hs).toMatchObject({
      algorithms: ["HS256"],
      clockToleranceSeconds: 30,
      workspaceClaim: "workspace_id",
      jwksCooldownMs: 30_000,
      jwksCacheMaxAgeMs: 600_000,
    });
    expect(authConfigSchema.parse({ jwtPublicKey: rsaPem }).algorithms).toEqual([
      "RS256",
      "RS384",
      "RS512",
      "PS256",
      "PS384",
      "PS512",
    ]);
    expect(authConfigSchema.parse({ jwtPublicKey: JSON.stringify(ecJwk) }).algorithms).toEqual(["ES384"]);
    expect(authConfigSchema.parse({ jwtPublicKey: edPem }).algorithms).toEqual(["EdDSA", "Ed25519"]);
    const jwks = authConfigSchema.parse({ jwksUrl: "https://idp.example/.well-known/jwks.json" }).algorithms;
    expect(jwks).toContain("RS256");
    expect(jwks).toContain("ES256");
    expect(jwks.some((alg) => alg.startsWith("HS"))).toBe(false);
  });

  it("requires exactly one key source", () => {
    expect(() => authConfigSchema.parse({})).toThrow(
      /exactly one of jwtSecret, jwtPublicKey, jwksUrl \(none is set\)/,
    );
    expect(() => authConfigSchema.parse({ jwtSecret: secret, jwksUrl: "https://idp.example/jwks" })).toThrow(
      /jwtSecret and jwksUrl are both set/,
    );
  });

  it("refuses a short secret, a bad URL and unknown keys", () => {
    expect(() => authConfigSchema.parse({ jwtSecret: "short" })).toThrow(/at least 32 bytes/);
    expect(() => authConfigSchema.parse({ jwksUrl: "ftp://idp.example/jwks" })).toThrow();
    expect(() => authConfigSchema.parse({ jwtSecret: secret, audiance: "x" })).toThrow();
  });

  it("refuses none, HMAC with a public key or JWKS, and algorithms the key cannot verify", () => {
    expect(() => authConfigSchema.parse({ jwtSecret: secret, algorithms: ["none"] })).toThrow(/'none'/);
    expect(() => authConfigSchema.parse({ jwtPublicKey: rsaPem, algorithms: ["HS256"] })).toThrow(/HMAC/);
    expect(() =>
      authConfigSchema.parse({ jwksUrl: "https://idp.example/jwks", algorithms: ["HS256"] }),
    ).toThrow(/HMAC/);
    expect(() => authConfigSchema.parse({ jwtPublicKey: rsaPem, algorithms: ["ES256"] })).toThrow(
      /cannot be verified/,
    );
    expect(() => authConfigSchema.parse({ jwtSecret: secret, algorithms: ["RS256"] })).toThrow(
      /cannot be verified/,
    );
    expect(() => authConfigSchema.parse({ jwtSecret: secret, algorithms: ["XS999"] })).toThrow(
      /cannot be verified/,
    );
  });

  it("refuses keys that are not usable public keys", async () => {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const privateJwk = JSON.stringify(await exportJWK(privateKey));
    expect(() => authConfigSchema.parse({ jwtPublicKey: privateJwk })).toThrow(/private JWK/);
    expect(() =>
      authConfigSchema.parse({ jwtPublicKey: "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----" }),
    ).toThrow(/private key/);
    expect(() => authConfigSchema.parse({ jwtPublicKey: JSON.stringify({ kty: "oct", k: "abc" }) })).toThrow(
      /jwtSecret/,
    );
    const weak = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({
      type: "spki",
      format: "pem",
    });
    expect(() => authConfigSchema.parse({ jwtPublicKey: weak.toString() })).toThrow(/shorter than 2048 bits/);
    expect(() => authConfigSchema.parse({ jwtPublicKey: "not a key" })).toThrow(/PEM SPKI/);
    expect(() => authConfigSchema.parse({ jwtPublicKey: "{not json" })).toThrow(/not valid JSON/);
    expect(() =>
      authConfigSchema.parse({ jwtPublicKey: JSON.stringify({ ...ecJwk, alg: "RS256" }) }),
    ).toThrow(/cannot verify/);
  });
});
