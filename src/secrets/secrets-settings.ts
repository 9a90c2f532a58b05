/**
 * `secrets`: the key ring workspace secrets are sealed with at rest (docs/secrets.md, "Keys").
 * Keys are given inline (`keys`, or SANDPOOL_SECRETS_KEYS) or in a file of their own
 * (`keysFile`, SANDPOOL_SECRETS_KEYS_FILE: a mounted secret), read once when the
 * configuration is loaded. Malformed keys stop the configuration from loading; no keys at all
 * is allowed: the gateway serves, and the secrets API answers `secrets.not_configured`.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { KeyRing, KeyRingError, parseKeyRing } from "./key-ring.js";

export const secretsSettingsSchema = z
  .strictObject({
    /** `id:base64key` entries, comma-separated; the first seals new values, every one opens. */
    keys: z.string().min(1).optional(),
    /** A file of `id:base64key` lines (a mounted secret), instead of `keys`. */
    keysFile: z.string().min(1).optional(),
  })
  .prefault({})
  .transform((settings, ctx) => {
    if (settings.keys !== undefined && settings.keysFile !== undefined) {
      ctx.addIssue({ code: "custom", path: ["keysFile"], message: "set keys or keysFile, not both" });
      return z.NEVER;
    }
    let keys = settings.keys;
    const where = settings.keysFile === undefined ? "keys" : "keysFile";
    if (settings.keysFile !== undefined) {
      try {
        keys = readFileSync(settings.keysFile, "utf8");
      } catch (error) {
        const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
        ctx.addIssue({
          code: "custom",
          path: ["keysFile"],
          message: `${settings.keysFile} cannot be read (${reason})`,
        });
        return z.NEVER;
      }
    }
    if (keys === undefined) return settings;
    try {
      parseKeyRing(keys);
    } catch (error) {
      if (!(error instanceof KeyRingError)) throw error;
      ctx.addIssue({ code: "custom", path: [where], message: error.message });
      return z.NEVER;
    }
    return { ...settings, keys };
  });

export type SecretsSettings = z.output<typeof secretsSettingsSchema>;

/** One ring per loaded configuration, shared by the secrets store and the egress CA's seal. */
const rings = new WeakMap<SecretsSettings, KeyRing>();

/** The deployment's key ring, or undefined when none is configured. */
export function keyRingOf(settings: SecretsSettings): KeyRing | undefined {
  if (settings.keys === undefined) return undefined;
  let ring = rings.get(settings);
  if (!ring) {
    ring = KeyRing.parse(settings.keys);
    rings.set(settings, ring);
  }
  return ring;
}
