/**
 * A Sealer for tests: AES-256-GCM under one random key, so a sealed value is opaque and
 * tampering is noticed, as with the real key ring (src/secrets/workspace-secrets.ts).
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { Sealer } from "../../src/secrets/workspace-secrets.js";

export function testSealer(key = randomBytes(32)): Sealer {
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return `test1:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64")}`;
    },
    open(sealed) {
      if (!sealed.startsWith("test1:")) throw new Error("not sealed by the test sealer");
      const bytes = Buffer.from(sealed.slice(6), "base64");
      const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, 12));
      decipher.setAuthTag(bytes.subarray(12, 28));
      return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]);
    },
  };
}
