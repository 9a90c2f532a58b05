/**
 * The shape of a sandpool API key: `sp_<prefix>_<secret>`. The prefix (12 lowercase hex
 * characters) is public: it names the key in listings, audit rows and `keys revoke`. The
 * secret is 32 random bytes (base64url), shown once and stored only as its SHA-256: with that
 * much entropy a fast hash is enough, nobody can search the space a slow hash protects.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export const API_KEY_MARKER = "sp_";
const keyPattern = /^sp_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;
export const apiKeyPrefixPattern = /^[0-9a-f]{12}$/;

export interface NewApiKey {
  /** The whole key, to hand to the operator once. */
  key: string;
  prefix: string;
  /** Hex SHA-256 of the secret: what is stored. */
  hashedSecret: string;
}

export function generateApiKey(): NewApiKey {
  const prefix = randomBytes(6).toString("hex");
  const secret = randomBytes(32).toString("base64url");
  return { key: `${API_KEY_MARKER}${prefix}_${secret}`, prefix, hashedSecret: hashSecret(secret) };
}

/** True when a bearer token claims to be a sandpool key (whether or not it is well formed). */
export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(API_KEY_MARKER);
}

/** The prefix and secret of a well-formed key, else undefined. */
export function parseApiKey(token: string): { prefix: string; secret: string } | undefined {
  const match = keyPattern.exec(token);
  return match ? { prefix: match[1]!, secret: match[2]! } : undefined;
}

export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** Compares a presented secret with a stored hash in time independent of where they differ. */
export function secretMatches(secret: string, hashedSecret: string): boolean {
  const presented = Buffer.from(hashSecret(secret), "hex");
  const stored = Buffer.from(hashedSecret, "hex");
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
