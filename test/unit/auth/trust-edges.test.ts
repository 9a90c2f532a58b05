/**
 * Trust edges of token verification: key endpoints only over https (plain http to loopback
 * alone), the audience switch, and the optional maximum token age. Pure checks: no request
 * leaves this process (a JWKS URL is only parsed here, never fetched).
 */
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { authConfigSchema } from "../../../src/auth/auth-config.js";
import { JwtAuthenticator } from "../../../src/auth/jwt-authenticator.js";
import { isLoopbackHost, isSecureOrLoopbackUrl } from "../../../src/auth/loopback-host.js";
import { SandpoolError } from "../../../src/contract/error-codes.js";

const secret = "a-test-secret-that-is-at-least-32-bytes-long";
const now = () => Math.floor(Date.now() / 1000);

function problems(input: Record<string, unknown>): string[] {
  const result = authConfigSchema.safeParse(input);
  return result.success ? [] : result.error.issues.map((issue) => issue.message);
}

describe("auth.jwksUrl", () => {
  it.each([
    "https://issuer.example/.well-known/jwks.json",
    "http://127.0.0.1:9000/jwks",
    "http://127.10.20.30/jwks",
    "http://localhost:8000/jwks",
    "http://[::1]:8000/jwks",
  ])("accepts %s", (jwksUrl) => {
    expect(problems({ jwksUrl })).toEqual([]);
  });

  it.each([
    "http://issuer.example/.well-known/jwks.json",
    "http://10.0.0.8/jwks",
    "http://127.0.0.1.nip.example/jwks",
    "http://localhost.evil.example/jwks",
    "http://[::2]/jwks",
    "http://0.0.0.0/jwks",
  ])("refuses plain http to %s, saying why", (jwksUrl) => {
    const found = problems({ jwksUrl });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/jwksUrl must use https \(plain http only to a loopback address/);
  });

  it("refuses other schemes", () => {
    expect(problems({ jwksUrl: "ftp://issuer.example/jwks" })).not.toEqual([]);
    expect(problems({ jwksUrl: "file:///etc/jwks.json" })).not.toEqual([]);
  });
});

describe("isLoopbackHost", () => {
  it("is true for 127.0.0.0/8, ::1 and localhost only", () => {
    for (const host of ["127.0.0.1", "127.255.255.254", "localhost", "LOCALHOST", "::1", "[::1]"])
      expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ["128.0.0.1", "10.0.0.1", "::", "::2", "localhost.example", "0.0.0.0", "1270.0.0.1"])
      expect(isLoopbackHost(host), host).toBe(false);
  });

  it("reads URLs as the URL parser canonicalises them (127.1, hex)", () => {
    expect(isSecureOrLoopbackUrl("http://127.1/jwks")).toBe(true);
    expect(isSecureOrLoopbackUrl("http://0x7f000001/jwks")).toBe(true);
    expect(isSecureOrLoopbackUrl("not a url")).toBe(false);
  });
});

describe("auth.anyAudience", () => {
  it("defaults to false", () => {
    expect(authConfigSchema.parse({ jwtSecret: secret }).anyAudience).toBe(false);
  });

  it("cannot be combined with an audience", () => {
    expect(problems({ jwtSecret: secret, audience: "sandpool", anyAudience: true })).toEqual([
      expect.stringMatching(/set audience or anyAudience: true, not both/),
    ]);
  });
});

describe("auth.maxTokenAgeSeconds", () => {
  const auth = new JwtAuthenticator(authConfigSchema.parse({ jwtSecret: secret, maxTokenAgeSeconds: 600 }));
  const sign = (claims: Record<string, unknown>) =>
    new SignJWT({ workspace_id: "ws-1", exp: now() + 3600, ...claims })
      .setProtectedHeader({ alg: "HS256" })
      .sign(new TextEncoder().encode(secret));

  async function refusal(token: string): Promise<SandpoolError> {
    const error = await auth.authenticate(`Bearer ${token}`).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SandpoolError);
    return error as SandpoolError;
  }

  it("accepts a token issued within the age, and ends its use when the age runs out", async () => {
    const iat = now() - 60;
    const caller = await auth.authenticate(`Bearer ${await sign({ iat })}`);
    expect(caller.workspace).toBe("ws-1");
    // Before exp: a cache of verified tokens must not trust it past iat + the maximum age.
    expect(caller.expiresAt).toBe(iat + 600);
  });

  it("refuses a token issued longer ago (401 auth.expired: its holder is told to get a new one)", async () => {
    const error = await refusal(await sign({ iat: now() - 3000 }));
    expect(error.status).toBe(401);
    expect(error.code).toBe("auth.expired");
    expect(error.message).toBe("the bearer token was issued too long ago for this gateway: get a new one");
  });

  it("refuses a token without iat", async () => {
    const error = await refusal(await sign({}));
    expect(error.status).toBe(401);
    expect((error.cause as Error).message).toMatch(/CLAIM_VALIDATION_FAILED/);
  });

  it("is not checked when unset: exp alone decides", async () => {
    const plain = new JwtAuthenticator(authConfigSchema.parse({ jwtSecret: secret }));
    const exp = now() + 3600;
    const caller = await plain.authenticate(`Bearer ${await sign({ iat: now() - 30 * 24 * 3600, exp })}`);
    expect(caller.expiresAt).toBe(exp);
  });
});
