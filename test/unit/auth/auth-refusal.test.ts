/**
 * Every refusal names its reason from the fixed set (the metric label), while the caller
 * sees one answer for every failed check (`auth.invalid` with one message, or
 * `auth.missing`); only the holder of a genuine token is told it expired (`auth.expired`)
 * or names no workspace.
 */
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { authConfigSchema } from "../../../src/auth/auth-config.js";
import { AuthRefusal, authFailureReason, authFailureReasons } from "../../../src/auth/auth-refusal.js";
import { BearerSourceRouter } from "../../../src/auth/bearer-sources.js";
import { JwtAuthenticator } from "../../../src/auth/jwt-authenticator.js";
import { SandpoolError } from "../../../src/contract/error-codes.js";

const secret = "a-test-secret-that-is-at-least-32-bytes-long";
const jwt = new JwtAuthenticator(authConfigSchema.parse({ jwtSecret: secret, audience: "sandpool" }));
const now = () => Math.floor(Date.now() / 1000);

function sign(claims: Record<string, unknown>, key = secret): Promise<string> {
  return new SignJWT({ workspace_id: "ws", aud: "sandpool", exp: now() + 60, ...claims })
    .setProtectedHeader({ alg: "HS256" })
    .sign(new TextEncoder().encode(key));
}

async function reasonOf(
  authorization: string | undefined,
  via: { authenticate(a?: string): Promise<unknown> } = jwt,
) {
  const error = await via.authenticate(authorization).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SandpoolError);
  const refusal = error as SandpoolError;
  expect(refusal.status).toBe(401);
  const reason = authFailureReason(error);
  if (reason === "expired") expect(refusal.code).toBe("auth.expired");
  else if (reason === "no_workspace") expect(refusal.message).toMatch(/^the token names no workspace/);
  else
    expect(refusal.message).toBe(
      refusal.code === "auth.missing" ? "a bearer token is required" : "invalid bearer token",
    );
  return reason;
}

describe("authentication failure reasons", () => {
  it("tells missing, malformed, forged, expired, wrong-audience and workspace-less JWTs apart", async () => {
    expect(await reasonOf(undefined)).toBe("missing");
    expect(await reasonOf("Basic dXNlcjpwYXNz")).toBe("malformed");
    expect(await reasonOf("Bearer not.a.jwt")).toBe("malformed");
    expect(await reasonOf(`Bearer ${await sign({}, "another-secret-that-is-at-least-32-bytes")}`)).toBe(
      "bad_signature",
    );
    expect(await reasonOf(`Bearer ${await sign({ exp: now() - 120 })}`)).toBe("expired");
    expect(await reasonOf(`Bearer ${await sign({ aud: "someone-else" })}`)).toBe("bad_claims");
    expect(await reasonOf(`Bearer ${await sign({ workspace_id: undefined })}`)).toBe("no_workspace");
  });

  it("names an opaque token that no source takes as unrecognised", async () => {
    const router = new BearerSourceRouter({ jwt, apiKeys: jwt });
    expect(await reasonOf("Bearer opaque-platform-token", router)).toBe("unrecognised");
  });

  it("maps the other auth codes, and anything else to other", () => {
    expect(authFailureReason(new SandpoolError("auth.rate_limited", "x"))).toBe("rate_limited");
    expect(authFailureReason(new SandpoolError("auth.forbidden", "x"))).toBe("not_admin");
    expect(authFailureReason(new SandpoolError("auth.introspection_unavailable", "x"))).toBe(
      "introspection_unavailable",
    );
    expect(authFailureReason(new Error("boom"))).toBe("other");
    expect(authFailureReasons).toContain(new AuthRefusal("revoked_key", "r").reason);
  });

  it("tells the caller only an expiry or a missing workspace; every other reason reads the same", () => {
    for (const reason of authFailureReasons) {
      const refusal = new AuthRefusal(reason, "operator detail", "told to the caller");
      if (reason === "missing")
        expect(refusal.toBody().detail).toEqual({
          code: "auth.missing",
          message: "a bearer token is required",
        });
      else if (reason === "expired" || reason === "expired_key")
        expect(refusal.toBody().detail).toEqual({ code: "auth.expired", message: "told to the caller" });
      else if (reason === "no_workspace")
        expect(refusal.toBody().detail).toEqual({ code: "auth.invalid", message: "told to the caller" });
      else
        expect(refusal.toBody().detail, reason).toEqual({
          code: "auth.invalid",
          message: "invalid bearer token",
        });
    }
    expect(new AuthRefusal("expired_key", "API key expired").message).toBe(
      "the API key has expired: ask for a new one",
    );
  });
});
