import { exportSPKI, generateKeyPair, SignJWT } from "jose";
import { describe, expect, it, vi } from "vitest";
import { authConfigSchema } from "../../../src/auth/auth-config.js";
import { JwtAuthenticator } from "../../../src/auth/jwt-authenticator.js";

// Wraps jose's importSPKI in a spy that still calls through, to count imports.
const importSPKI = vi.hoisted(() => vi.fn());
vi.mock("jose", async (importOriginal) => {
  const jose = await importOriginal<typeof import("jose")>();
  importSPKI.mockImplementation(jose.importSPKI);
  return { ...jose, importSPKI };
});

describe("JwtAuthenticator key import", () => {
  it("imports a public key lazily, once per algorithm", async () => {
    const rsa = await generateKeyPair("RS256", { extractable: true });
    const auth = new JwtAuthenticator(
      authConfigSchema.parse({ jwtPublicKey: await exportSPKI(rsa.publicKey) }),
    );
    expect(importSPKI).not.toHaveBeenCalled();
    const token = await new SignJWT({ workspace_id: "ws-1" })
      .setProtectedHeader({ alg: "RS256" })
      .setExpirationTime("1h")
      .sign(rsa.privateKey);
    await Promise.all([1, 2, 3].map(() => auth.authenticate(`Bearer ${token}`)));
    await auth.authenticate(`Bearer ${token}`);
    expect(importSPKI).toHaveBeenCalledTimes(1);
    expect(importSPKI).toHaveBeenCalledWith(expect.any(String), "RS256");
  });
});
