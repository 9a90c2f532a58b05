import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { authConfigSchema } from "../../../src/auth/auth-config.js";
import { JwtAuthenticator } from "../../../src/auth/jwt-authenticator.js";
import type { BearerAuthenticator, Caller } from "../../../src/auth/principal.js";
import { CachingAuthenticator } from "../../../src/auth/verified-token-cache.js";
import { SandpoolError } from "../../../src/contract/error-codes.js";

const T0 = 1_800_000_000_000; // ms; exp below is in seconds

/** An authenticator that accepts `Bearer ok-*` for a fixed caller and counts its calls. */
class CountingAuthenticator implements BearerAuthenticator {
  calls = 0;
  refuse = false;
  constructor(private readonly expiresAt = T0 / 1000 + 3600) {}
  async authenticate(authorization: string | undefined): Promise<Caller> {
    this.calls++;
    if (this.refuse || !authorization?.startsWith("Bearer ok-"))
      throw new SandpoolError("auth.invalid", "invalid bearer token");
    return {
      workspace: authorization.slice(10),
      subject: "s",
      tokenId: undefined,
      expiresAt: this.expiresAt,
    };
  }
}

function setup(options: { maxAgeMs?: number; maxEntries?: number; expiresAt?: number } = {}) {
  let now = T0;
  const inner = new CountingAuthenticator(options.expiresAt);
  const cache = new CachingAuthenticator(inner, {
    maxAgeMs: options.maxAgeMs ?? 60_000,
    maxEntries: options.maxEntries,
    now: () => now,
  });
  return { inner, cache, advance: (ms: number) => (now += ms) };
}

describe("CachingAuthenticator", () => {
  it("verifies a token once and answers the same caller after that", async () => {
    const { inner, cache } = setup();
    const first = await cache.authenticate("Bearer ok-ws1");
    const second = await cache.authenticate("Bearer ok-ws1");
    expect(second).toEqual(first);
    expect(second.workspace).toBe("ws1");
    expect(inner.calls).toBe(1);
  });

  it("verifies every different token, even for the same workspace", async () => {
    const { inner, cache } = setup();
    await cache.authenticate("Bearer ok-ws1");
    await cache.authenticate("Bearer ok-ws1 ");
    await cache.authenticate("Bearer ok-ws2");
    expect(inner.calls).toBe(3);
  });

  it("verifies again once the cache age has passed", async () => {
    const { inner, cache, advance } = setup({ maxAgeMs: 1_000 });
    await cache.authenticate("Bearer ok-ws1");
    advance(999);
    await cache.authenticate("Bearer ok-ws1");
    expect(inner.calls).toBe(1);
    advance(1);
    await cache.authenticate("Bearer ok-ws1");
    expect(inner.calls).toBe(2);
  });

  it("never answers from the cache past the token's exp", async () => {
    const { inner, cache, advance } = setup({ expiresAt: T0 / 1000 + 5 });
    await cache.authenticate("Bearer ok-ws1");
    advance(5_000);
    inner.refuse = true; // what the verifier says of an expired token
    await expect(cache.authenticate("Bearer ok-ws1")).rejects.toThrow(SandpoolError);
    expect(inner.calls).toBe(2);
  });

  it("does not cache refusals", async () => {
    const { inner, cache } = setup();
    await expect(cache.authenticate("Bearer bad")).rejects.toThrow(SandpoolError);
    await expect(cache.authenticate("Bearer bad")).rejects.toThrow(SandpoolError);
    await expect(cache.authenticate(undefined)).rejects.toThrow(SandpoolError);
    expect(inner.calls).toBe(3);
  });

  it("verifies every request when its age is 0", async () => {
    const { inner, cache } = setup({ maxAgeMs: 0 });
    await cache.authenticate("Bearer ok-ws1");
    await cache.authenticate("Bearer ok-ws1");
    expect(inner.calls).toBe(2);
  });

  it("forgets the oldest verdict when full", async () => {
    const { inner, cache } = setup({ maxEntries: 2 });
    await cache.authenticate("Bearer ok-a");
    await cache.authenticate("Bearer ok-b");
    await cache.authenticate("Bearer ok-c"); // evicts a
    await cache.authenticate("Bearer ok-c");
    await cache.authenticate("Bearer ok-b");
    expect(inner.calls).toBe(3);
    await cache.authenticate("Bearer ok-a");
    expect(inner.calls).toBe(4);
  });

  it("hands out copies: a caller changed by a route does not change the cached verdict", async () => {
    const { cache } = setup();
    const first = await cache.authenticate("Bearer ok-ws1");
    first.workspace = "someone-else";
    expect((await cache.authenticate("Bearer ok-ws1")).workspace).toBe("ws1");
  });

  it("in front of the JWT verifier, still refuses a token with a bad signature after a good one", async () => {
    const secret = "a-test-secret-that-is-at-least-32-bytes-long";
    const jwt = new JwtAuthenticator(authConfigSchema.parse({ jwtSecret: secret }));
    const cache = new CachingAuthenticator(jwt, { maxAgeMs: 60_000 });
    const token = await new SignJWT({ workspace_id: "ws-1" })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode(secret));
    expect((await cache.authenticate(`Bearer ${token}`)).workspace).toBe("ws-1");
    const forged = `${token.slice(0, -2)}${token.endsWith("AA") ? "BB" : "AA"}`;
    await expect(cache.authenticate(`Bearer ${forged}`)).rejects.toThrow(SandpoolError);
    expect((await cache.authenticate(`Bearer ${token}`)).workspace).toBe("ws-1");
  });
});
