import { describe, expect, it } from "vitest";
import { BearerSourceRouter } from "../../../src/auth/bearer-sources.js";
import { introspectionConfigSchema } from "../../../src/auth/introspection-config.js";
import type { BearerAuthenticator, Caller } from "../../../src/auth/principal.js";

function recorder(name: string) {
  const seen: (string | undefined)[] = [];
  const source: BearerAuthenticator = {
    async authenticate(value) {
      seen.push(value);
      return { workspace: name, subject: undefined, tokenId: undefined, expiresAt: 0 } satisfies Caller;
    },
  };
  return { seen, source };
}

const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJ3b3Jrc3BhY2VfaWQiOiJhIn0.c2ln";
const key = `sp_0123456789ab_${"A".repeat(43)}`;

describe("BearerSourceRouter", () => {
  it("routes sp_ keys to the key source, JWTs to the JWT verifier, anything else to introspection", async () => {
    const j = recorder("jwt");
    const k = recorder("keys");
    const i = recorder("introspection");
    const router = new BearerSourceRouter({ jwt: j.source, apiKeys: k.source, introspection: i.source });
    expect((await router.authenticate(`Bearer ${key}`)).workspace).toBe("keys");
    expect((await router.authenticate(`Bearer ${jwt}`)).workspace).toBe("jwt");
    expect((await router.authenticate("bearer opaque-platform-token")).workspace).toBe("introspection");
    // The JWT verifier gets the whole header (as before); the others the bare token.
    expect(j.seen).toEqual([`Bearer ${jwt}`]);
    expect(k.seen).toEqual([key]);
    expect(i.seen).toEqual(["opaque-platform-token"]);
  });

  it("never sends a JWT or a sandpool key to the introspection endpoint", async () => {
    const i = recorder("introspection");
    const j = recorder("jwt");
    const router = new BearerSourceRouter({ jwt: j.source, introspection: i.source });
    await router.authenticate(`Bearer ${jwt}`);
    await expect(router.authenticate(`Bearer ${key}`)).rejects.toMatchObject({ code: "auth.invalid" });
    expect(i.seen).toEqual([]);
  });

  it("refuses an opaque token with 401 when no introspection is configured, and a missing header with auth.missing", async () => {
    const router = new BearerSourceRouter({ jwt: recorder("jwt").source });
    await expect(router.authenticate("Bearer opaque")).rejects.toMatchObject({
      code: "auth.invalid",
      status: 401,
    });
    await expect(router.authenticate(undefined)).rejects.toMatchObject({ code: "auth.missing" });
    await expect(router.authenticate(`Bearer ${"x".repeat(20_000)}`)).resolves.toMatchObject({
      workspace: "jwt",
    });
  });
});

describe("auth.introspection", () => {
  const base = { clientId: "sandpool", clientSecret: "s" };
  it("requires https, except to a loopback address", () => {
    expect(
      introspectionConfigSchema.safeParse({ ...base, url: "https://idp.example/introspect" }).success,
    ).toBe(true);
    expect(introspectionConfigSchema.safeParse({ ...base, url: "http://127.0.0.1:8000/i" }).success).toBe(
      true,
    );
    expect(introspectionConfigSchema.safeParse({ ...base, url: "http://[::1]:8000/i" }).success).toBe(true);
    for (const url of ["http://idp.example/introspect", "http://10.0.0.5/i", "ftp://127.0.0.1/i"]) {
      expect(introspectionConfigSchema.safeParse({ ...base, url }).success, url).toBe(false);
    }
  });

  it("defaults the workspace field, the caches and the timeout", () => {
    expect(introspectionConfigSchema.parse({ ...base, url: "https://idp.example/i" })).toMatchObject({
      workspaceField: "workspace_id",
      cacheSeconds: 60,
      refusalCacheSeconds: 5,
      timeoutMs: 3000,
    });
    expect(introspectionConfigSchema.safeParse({ url: "https://idp.example/i" }).success).toBe(false);
  });
});
