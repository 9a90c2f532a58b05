import { chmod, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeJwt } from "jose";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { authConfigSchema } from "../../../src/auth/auth-config.js";
import { devKeyFileName, loadOrCreateDevKey, mintToken } from "../../../src/auth/dev-keys.js";
import { JwtAuthenticator } from "../../../src/auth/jwt-authenticator.js";

let dataDir: string;

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "sandpool-dev-keys-"));
});

afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe("loadOrCreateDevKey", () => {
  it("creates a 32-byte secret in a file only its owner can read", async () => {
    const { secret } = await loadOrCreateDevKey(dataDir);
    expect(Buffer.from(secret, "base64url")).toHaveLength(32);
    const info = await stat(join(dataDir, devKeyFileName));
    expect(info.mode & 0o777).toBe(0o600);
  });

  it("reuses the key on later calls, including concurrent ones", async () => {
    const [a, b] = await Promise.all([loadOrCreateDevKey(dataDir), loadOrCreateDevKey(dataDir)]);
    expect(a.secret).toBe(b.secret);
    expect((await loadOrCreateDevKey(dataDir)).secret).toBe(a.secret);
    expect((await readFile(join(dataDir, devKeyFileName), "utf8")).trim()).toBe(a.secret);
  });

  it("creates a missing data directory", async () => {
    const nested = join(dataDir, "a", "b");
    await loadOrCreateDevKey(nested);
    expect((await stat(join(nested, devKeyFileName))).isFile()).toBe(true);
  });

  it("tightens the mode of an existing key file and refuses a short key", async () => {
    const path = join(dataDir, devKeyFileName);
    await writeFile(path, `${"k".repeat(40)}\n`);
    await chmod(path, 0o644);
    await loadOrCreateDevKey(dataDir);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    await writeFile(path, "short\n");
    await expect(loadOrCreateDevKey(dataDir)).rejects.toThrow(/shorter than 32 bytes/);
  });
});

describe("mintToken", () => {
  it("mints a token the authenticator accepts for the workspace", async () => {
    const { secret } = await loadOrCreateDevKey(dataDir);
    const token = await mintToken({ secret, workspace: "dev", subject: "me" });
    const auth = new JwtAuthenticator(authConfigSchema.parse({ jwtSecret: secret }));
    const principal = await auth.authenticate(`Bearer ${token}`);
    expect(principal).toMatchObject({ workspace: "dev", subject: "me" });
    expect(principal.tokenId).toMatch(/^[0-9a-f-]{36}$/);

    const claims = decodeJwt(token);
    expect(claims.exp! - claims.iat!).toBe(86_400);
  });

  it("honours ttl, issuer, audience and a custom workspace claim", async () => {
    const { secret } = await loadOrCreateDevKey(dataDir);
    const token = await mintToken({
      secret,
      workspace: "team-a",
      ttlSeconds: 60,
      issuer: "sandpool-dev",
      audience: "sandpool",
      workspaceClaim: "tenant",
    });
    const auth = new JwtAuthenticator(
      authConfigSchema.parse({
        jwtSecret: secret,
        issuer: "sandpool-dev",
        audience: "sandpool",
        workspaceClaim: "tenant",
      }),
    );
    await expect(auth.authenticate(`Bearer ${token}`)).resolves.toMatchObject({ workspace: "team-a" });
    const claims = decodeJwt(token);
    expect(claims.exp! - claims.iat!).toBe(60);
  });

  it("mints tokens another dev key does not accept", async () => {
    const { secret } = await loadOrCreateDevKey(dataDir);
    const otherDir = await mkdtemp(join(tmpdir(), "sandpool-dev-keys-"));
    try {
      const other = await loadOrCreateDevKey(otherDir);
      const auth = new JwtAuthenticator(authConfigSchema.parse({ jwtSecret: other.secret }));
      const token = await mintToken({ secret, workspace: "dev" });
      await expect(auth.authenticate(`Bearer ${token}`)).rejects.toMatchObject({ code: "auth.invalid" });
    } finally {
      await rm(otherDir, { recursive: true, force: true });
    }
  });
});
