/**
 * `secrets.keys` / `secrets.keysFile` and their environment variables: a key ring given inline
 * or in a mounted file, either replacing the other; malformed keys stop the configuration
 * loading with the setting named (never the key); no keys at all is fine.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadGatewayConfig } from "../../../src/config/load-config.js";
import { problemsOf } from "../config/config-problems.js";

const dir = mkdtempSync(path.join(tmpdir(), "sandpool-secrets-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const minimal = `
auth:
  jwtSecret: a-test-secret-that-is-at-least-32-bytes-long
policy:
  allowedImages: [img/a]
  defaultImage: img/a
pools:
  - name: a
    image: img/a
`;
let count = 0;
function file(text: string): string {
  const name = path.join(dir, `file-${++count}`);
  writeFileSync(name, text);
  return name;
}
const key = () => randomBytes(32).toString("base64");
const load = (extra: string, env: NodeJS.ProcessEnv = {}) =>
  loadGatewayConfig({ file: file(minimal + extra), env });

describe("secrets settings", () => {
  it("has no key ring unless one is given", () => {
    expect(load("").secrets.keys).toBeUndefined();
  });

  it("takes keys inline, from SANDPOOL_SECRETS_KEYS, or from a keys file", () => {
    const inline = `k1:${key()}`;
    expect(load(`secrets:\n  keys: "${inline}"\n`).secrets.keys).toBe(inline);
    const fromEnv = `k2:${key()},k1:${key()}`;
    expect(load(`secrets:\n  keys: "${inline}"\n`, { SANDPOOL_SECRETS_KEYS: fromEnv }).secrets.keys).toBe(
      fromEnv,
    );
    const keysFile = file(`k3:${key()}\nk2:${key()}\n`);
    // The file's variable replaces the inline keys of the file rather than clashing with them.
    const loaded = load(`secrets:\n  keys: "${inline}"\n`, { SANDPOOL_SECRETS_KEYS_FILE: keysFile });
    expect(loaded.secrets.keysFile).toBe(keysFile);
    expect(loaded.secrets.keys).toContain("k3:");
  });

  it("refuses malformed keys, both sources at once, and an unreadable file, naming the setting", () => {
    const short = randomBytes(8).toString("base64");
    const bad = problemsOf(() => load("", { SANDPOOL_SECRETS_KEYS: `k1:${short}` })).join("\n");
    expect(bad).toMatch(/SANDPOOL_SECRETS_KEYS|secrets\.keys/);
    expect(bad).toMatch(/8 bytes, it must be 32/);
    expect(bad).not.toContain(short);
    const both = problemsOf(() => load(`secrets:\n  keys: "k1:${key()}"\n  keysFile: /nowhere\n`)).join("\n");
    expect(both).toMatch(/set keys or keysFile, not both/);
    const missing = problemsOf(() => load("secrets:\n  keysFile: /no/such/file\n")).join("\n");
    expect(missing).toMatch(/\/no\/such\/file cannot be read \(ENOENT\)/);
    const duplicate = problemsOf(() =>
      load("", { SANDPOOL_SECRETS_KEYS_FILE: file(`a:${key()}\na:${key()}\n`) }),
    );
    expect(duplicate.join("\n")).toMatch(/the id 'a' is given twice/);
  });
});
