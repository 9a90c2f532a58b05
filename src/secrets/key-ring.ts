/**
 * The deployment's key ring for values at rest: AES-256-GCM with a random 96-bit nonce per
 * value. A sealed value names the key that sealed it (`v1:<keyId>:<nonce>:<ciphertext+tag>`,
 * base64url parts), so keys can rotate: the first key of the ring (the newest) seals, every
 * key opens, and a value sealed under a key since removed fails loudly instead of decrypting
 * to garbage. GCM's tag makes any change to a sealed value (or to its key id) an error.
 *
 * Keys come from `secrets.keys` / SANDPOOL_SECRETS_KEYS (`id:base64key,id:base64key`) or a
 * file of one `id:base64key` per line (`secrets.keysFile`, a mounted secret): docs/secrets.md.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { Sealer } from "./workspace-secrets.js";

const ALGORITHM = "aes-256-gcm";
const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const FORMAT = "v1";
/** Key ids appear in every sealed value: short, and without the separator. */
export const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;

export interface RingKey {
  id: string;
  key: Buffer;
}

/** A key ring entry that cannot be used, said so that the operator can find it. */
export class KeyRingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KeyRingError";
  }
}

/**
 * Parses `id:base64key` entries (comma- or newline-separated; blank lines and `#` comments
 * skipped). Errors name the entry by its position and id, never by its key material.
 */
export function parseKeyRing(text: string): RingKey[] {
  const entries = text
    .split(/[,\n]/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "" && !entry.startsWith("#"));
  if (entries.length === 0) throw new KeyRingError("no key: give at least one id:base64key");
  const seen = new Set<string>();
  return entries.map((entry, index) => {
    const colon = entry.indexOf(":");
    const where = `key ${index + 1}`;
    if (colon === -1) throw new KeyRingError(`${where} is not id:base64key`);
    const id = entry.slice(0, colon);
    const encoded = entry.slice(colon + 1).trim();
    if (!KEY_ID_PATTERN.test(id))
      throw new KeyRingError(`${where}: the id must be 1 to 32 letters, digits, _ or -`);
    if (seen.has(id)) throw new KeyRingError(`${where}: the id '${id}' is given twice`);
    seen.add(id);
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(encoded))
      throw new KeyRingError(`${where} ('${id}'): the key is not base64`);
    const key = Buffer.from(encoded, "base64");
    if (key.length !== KEY_BYTES)
      throw new KeyRingError(
        `${where} ('${id}'): the key is ${key.length} bytes, it must be ${KEY_BYTES} (e.g. \`openssl rand -base64 32\`)`,
      );
    return { id, key };
  });
}

/** A fresh random key as an `id:base64key` entry (dev mode's, and the docs' advice). */
export function newKeyEntry(id: string): string {
  return `${id}:${randomBytes(KEY_BYTES).toString("base64")}`;
}

export class KeyRing implements Sealer {
  private readonly keys: ReadonlyMap<string, Buffer>;
  private readonly sealing: RingKey;

  /** `keys[0]` seals; every key opens. */
  constructor(keys: readonly RingKey[]) {
    if (keys.length === 0) throw new KeyRingError("a key ring needs at least one key");
    this.sealing = keys[0]!;
    this.keys = new Map(keys.map((entry) => [entry.id, entry.key]));
  }

  static parse(text: string): KeyRing {
    return new KeyRing(parseKeyRing(text));
  }

  /** The id of the key new values are sealed with. */
  get sealingKeyId(): string {
    return this.sealing.id;
  }

  seal(plain: Buffer, context: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.sealing.key, nonce);
    // The key id is authenticated too (a value cannot be passed off as sealed by another key),
    // and so is what the value is for (it does not open as another row's).
    cipher.setAAD(additionalData(this.sealing.id, context));
    const body = Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return [FORMAT, this.sealing.id, nonce.toString("base64url"), body.toString("base64url")].join(":");
  }

  open(sealed: string, context: string): Buffer {
    const parts = sealed.split(":");
    if (parts.length !== 4 || parts[0] !== FORMAT) throw new KeyRingError("not a sealed value");
    const [, id, nonceText, bodyText] = parts as [string, string, string, string];
    const key = this.keys.get(id);
    if (key === undefined)
      throw new KeyRingError(`sealed with key '${id}', which is not in the key ring (removed too early?)`);
    const nonce = Buffer.from(nonceText, "base64url");
    const body = Buffer.from(bodyText, "base64url");
    if (nonce.length !== NONCE_BYTES || body.length < TAG_BYTES) throw new KeyRingError("not a sealed value");
    const decipher = createDecipheriv(ALGORITHM, key, nonce);
    decipher.setAAD(additionalData(id, context));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new KeyRingError(
        `a value sealed with key '${id}' does not open: changed, a different key, or sealed for another row`,
      );
    }
  }
}

function additionalData(keyId: string, context: string): Buffer {
  return Buffer.from(`${keyId}\u0000${context}`);
}
