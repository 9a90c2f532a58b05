/**
 * `sandpool dev` seals workspace secrets without anything configured: a key generated once and
 * kept beside dev's other state (`<dataDir>/dev-secrets-keys`, mode 0600), so secrets stored
 * yesterday still open today. Production configures secrets.keys or secrets.keysFile instead.
 */
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { newKeyEntry, parseKeyRing } from "./key-ring.js";

export const devSecretsKeysFileName = "dev-secrets-keys";

/** The key ring text of `<dataDir>/dev-secrets-keys`, the file created with one fresh key if absent. */
export async function loadOrCreateDevSecretsKeys(dataDir: string): Promise<string> {
  const path = join(dataDir, devSecretsKeysFileName);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  try {
    // `wx`: two processes starting at once cannot overwrite each other's key.
    await writeFile(path, `${newKeyEntry("dev")}\n`, { flag: "wx", mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    await chmod(path, 0o600);
  }
  const text = await readFile(path, "utf8");
  try {
    parseKeyRing(text);
  } catch (error) {
    throw new Error(`${path}: ${(error as Error).message}; fix it, or delete it (its secrets are then lost)`);
  }
  return text;
}
