/**
 * Admin tokens: the admin claim (`auth.adminClaim`, default `sandpool_admin`) as the JSON `true`
 * makes a token an admin token, whose workspace claim is optional (absent or `*` leaves it
 * scoped to no workspace). Ordinary tokens still need a workspace.
 */
import { type JWTPayload, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { authConfigSchema } from "../../../src/auth/auth-config.js";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { JwtAuthenticator } from "../../../src/auth/jwt-authenticator.js";
import { scopedPrincipal } from "../../../src/auth/principal.js";

const secret = "an-admin-test-secret-of-at-least-32-bytes";
const now = () => Math.floor(Date.now() / 1000);

function sign(claims: JWTPayload): Promise<string> {
  return new SignJWT({ exp: now() + 600, ...claims })
    .setProtectedHeader({ alg: "HS256" })
    .sign(new TextEncoder().encode(secret));
}

const auth = new JwtAuthenticator(authConfigSchema.parse({ jwtSecret: secret }));

describe("admin tokens", () => {
  it("defaults the admin claim to sandpool_admin", () => {
    expect(authConfigSchema.parse({ jwtSecret: secret }).adminClaim).toBe("sandpool_admin");
  });

  it("accepts an admin token without a workspace, or with *, as scoped to none", async () => {
    for (const claims of [{ sandpool_admin: true }, { sandpool_admin: true, workspace_id: "*" }]) {
      const caller = await auth.authenticate(`Bearer ${await sign({ ...claims, sub: "ops" })}`);
      expect(caller).toMatchObject({ admin: true, workspace: undefined, subject: "ops" });
      expect(scopedPrincipal(caller)).toBeUndefined();
    }
  });

  it("keeps an admin token's workspace when it names one", async () => {
    const caller = await auth.authenticate(
      `Bearer ${await sign({ sandpool_admin: true, workspace_id: "ws-1" })}`,
    );
    expect(caller).toMatchObject({ admin: true, workspace: "ws-1" });
    expect(scopedPrincipal(caller)).toBe(caller);
  });

  it("treats anything but true as an ordinary token, which needs a workspace", async () => {
    for (const value of ["true", 1, false, null, { admin: true }, [true]]) {
      const withWorkspace = await auth.authenticate(
        `Bearer ${await sign({ sandpool_admin: value, workspace_id: "ws-1" })}`,
      );
      expect(withWorkspace.admin).toBeUndefined();
      await expect(
        auth.authenticate(`Bearer ${await sign({ sandpool_admin: value })}`),
      ).rejects.toMatchObject({
        code: "auth.invalid",
        message: expect.stringMatching(/^the token names no workspace/),
      });
    }
    await expect(auth.authenticate(`Bearer ${await sign({ workspace_id: "*" })}`)).rejects.toMatchObject({
      code: "auth.invalid",
    });
  });

  it("reads the configured admin claim, and only that one", async () => {
    const custom = new JwtAuthenticator(
      authConfigSchema.parse({ jwtSecret: secret, adminClaim: "https://example.com/admin" }),
    );
    const admin = await custom.authenticate(`Bearer ${await sign({ "https://example.com/admin": true })}`);
    expect(admin).toMatchObject({ admin: true, workspace: undefined });
    await expect(custom.authenticate(`Bearer ${await sign({ sandpool_admin: true })}`)).rejects.toMatchObject(
      {
        code: "auth.invalid",
      },
    );
  });
});

describe("mintToken for admins", () => {
  it("mints an admin token without a workspace that the authenticator accepts", async () => {
    const token = await mintToken({ secret, admin: true, subject: "dev-admin" });
    await expect(auth.authenticate(`Bearer ${token}`)).resolves.toMatchObject({
      admin: true,
      workspace: undefined,
      subject: "dev-admin",
    });
  });

  it("honours a custom admin claim and an optional workspace", async () => {
    const token = await mintToken({ secret, admin: true, adminClaim: "is_admin", workspace: "ws-2" });
    const custom = new JwtAuthenticator(
      authConfigSchema.parse({ jwtSecret: secret, adminClaim: "is_admin" }),
    );
    await expect(custom.authenticate(`Bearer ${token}`)).resolves.toMatchObject({
      admin: true,
      workspace: "ws-2",
    });
  });

  it("refuses to mint an ordinary token without a workspace", async () => {
    await expect(mintToken({ secret })).rejects.toThrow(/needs a workspace unless it is an admin token/);
  });

  it("mints ordinary tokens as before: no admin claim", async () => {
    const caller = await auth.authenticate(`Bearer ${await mintToken({ secret, workspace: "ws-3" })}`);
    expect(caller).not.toHaveProperty("admin");
  });
});
