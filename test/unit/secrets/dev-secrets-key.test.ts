/**
 * `sandpool dev` keeps its secrets key beside its other state: created once (mode 0600), the
 * same key on every later start (so secrets stored yesterday open today), and a damaged file
 * named with what to do about it.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { devSecretsKeysFileName, loadOrCreateDevSecretsKeys } from "../../../src/secrets/dev-secrets-key.js";
import { KeyRing } from "../../../src/secrets/key-ring.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "sandpool-dev-secrets-"));
  dirs.push(dir);
  return dir;
}

describe("loadOrCreateDevSecretsKeys", () => {
  it("creates a private key ring once and reads the same one afterwards", async () => {
    const dir = await dataDir();
    const first = await loadOrCreateDevSecretsKeys(dir);
    const info = await stat(join(dir, devSecretsKeysFileName));
    expect(info.mode & 0o777).toBe(0o600);
    expect(await loadOrCreateDevSecretsKeys(dir)).toBe(first);
    const sealed = KeyRing.parse(first).seal(Buffer.from("kept"), "ctx");
    expect(
      KeyRing.parse(await loadOrCreateDevSecretsKeys(dir))
        .open(sealed, "ctx")
        .toString(),
    ).toBe("kept");
  });

  it("names a damaged file and what to do", async () => {
    const dir = await dataDir();
    await writeFile(join(dir, devSecretsKeysFileName), "dev:short\n", { mode: 0o600 });
    await expect(loadOrCreateDevSecretsKeys(dir)).rejects.toThrow(/dev-secrets-keys: .*delete it/);
    expect(await readFile(join(dir, devSecretsKeysFileName), "utf8")).toBe("dev:short\n");
  });
});
