import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { authConfigSchema } from "../../../src/auth/auth-config.js";
import { JwtAuthenticator } from "../../../src/auth/jwt-authenticator.js";
import { SandpoolError } from "../../../src/contract/error-codes.js";

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

interface JwksServer {
  url: string;
  requests: () => number;
  server: Server;
}

const servers: Server[] = [];

/** A JWKS endpoint on 127.0.0.1 that counts its requests; `hang` accepts but never answers. */
async function startJwksServer(keys: JWK[], options: { hang?: boolean } = {}): Promise<JwksServer> {
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    if (options.hang) return;
    if (req.url !== "/jwks.json") {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/jwks.json`, requests: () => requests, server };
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => (server.listening ? stop(server) : undefined)));
});

function sign(key: KeyPair, kid: string, workspace = "ws-jwks"): Promise<string> {
  return new SignJWT({ workspace_id: workspace })
    .setProtectedHeader({ alg: "ES256", kid })
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(key.privateKey);
}

function authenticator(jwksUrl: string, timeoutMs = 5_000): JwtAuthenticator {
  return new JwtAuthenticator(authConfigSchema.parse({ jwksUrl, jwksTimeoutMs: timeoutMs }));
}

async function expectInvalid(promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SandpoolError);
  expect((error as SandpoolError).code).toBe("auth.invalid");
  expect((error as SandpoolError).message).toBe("invalid bearer token");
}

describe("JwtAuthenticator with a JWKS URL", () => {
  let signer: KeyPair;
  let publicJwk: JWK;

  beforeAll(async () => {
    signer = await generateKeyPair("ES256", { extractable: true });
    publicJwk = { ...(await exportJWK(signer.publicKey)), kid: "key-1", alg: "ES256", use: "sig" };
  });

  it("verifies a token whose kid is in the set", async () => {
    const jwks = await startJwksServer([publicJwk]);
    const auth = authenticator(jwks.url);
    await expect(auth.authenticate(`Bearer ${await sign(signer, "key-1", "team-x")}`)).resolves.toMatchObject(
      {
        workspace: "team-x",
      },
    );
  });

  it("fetches the set once for many verifications, and not at construction", async () => {
    const jwks = await startJwksServer([publicJwk]);
    const auth = authenticator(jwks.url);
    expect(jwks.requests()).toBe(0);
    const tokens = await Promise.all(["a", "b", "c", "d", "e"].map((ws) => sign(signer, "key-1", ws)));
    for (const token of tokens) await auth.authenticate(`Bearer ${token}`);
    await Promise.all(tokens.map((token) => auth.authenticate(`Bearer ${token}`)));
    expect(jwks.requests()).toBe(1);
  });

  it("refuses a token whose kid is unknown, without refetching inside the cooldown", async () => {
    const jwks = await startJwksServer([publicJwk]);
    const auth = authenticator(jwks.url);
    await auth.authenticate(`Bearer ${await sign(signer, "key-1")}`);
    const stranger = await generateKeyPair("ES256");
    for (let i = 0; i < 5; i++)
      await expectInvalid(auth.authenticate(`Bearer ${await sign(stranger, "key-2")}`));
    expect(jwks.requests()).toBe(1);
  });

  it("refuses a token signed by another key under a known kid", async () => {
    const jwks = await startJwksServer([publicJwk]);
    const impostor = await generateKeyPair("ES256");
    await expectInvalid(authenticator(jwks.url).authenticate(`Bearer ${await sign(impostor, "key-1")}`));
  });

  it("answers auth.invalid when the JWKS server is down", async () => {
    const jwks = await startJwksServer([publicJwk]);
    await stop(jwks.server);
    const started = Date.now();
    await expectInvalid(authenticator(jwks.url, 500).authenticate(`Bearer ${await sign(signer, "key-1")}`));
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("answers auth.invalid within the timeout when the JWKS server never answers", async () => {
    const jwks = await startJwksServer([publicJwk], { hang: true });
    const started = Date.now();
    await expectInvalid(authenticator(jwks.url, 300).authenticate(`Bearer ${await sign(signer, "key-1")}`));
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(jwks.requests()).toBe(1);
  });

  it("answers auth.invalid when the JWKS endpoint returns an error", async () => {
    const jwks = await startJwksServer([publicJwk]);
    const auth = authenticator(jwks.url.replace("/jwks.json", "/missing.json"));
    await expectInvalid(auth.authenticate(`Bearer ${await sign(signer, "key-1")}`));
  });
});
