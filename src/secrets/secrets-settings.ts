/**
 * `secrets`: the key ring workspace secrets are sealed with at rest (docs/secrets.md, "Keys").
 * Keys are given inline (`keys`, or SANDPOOL_SECRETS_KEYS) or in a file of their own
 * (`keysFile`, SANDPOOL_SECRETS_KEYS_FILE: a mounted secret), read once when the
 * configuration is loaded. Malformed keys stop the configuration from loading; no keys at all
 * is allowed: the gateway serves, and the secrets API answers `secrets.not_configured`.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { settingDocs } from "../contract/setting-docs.js";
import { KeyRing, KeyRingError, parseKeyRing } from "./key-ring.js";

export const secretsSettingsSchema = z
  .strictObject({
    /** `id:base64key` entries, comma-separated; the first seals new values, every one opens. */
    keys: z
      .string()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "id:base64key entries, comma-separated, 32-byte keys (replace the example: openssl rand -base64 32); the first seals, every one opens. Env SANDPOOL_SECRETS_KEYS.",
        example: "k1:Y2hhbmdlLW1lLW9wZW5zc2wtcmFuZC1iYXNlNjQtMzI=",
        env: {
          name: "SANDPOOL_SECRETS_KEYS",
          description:
            "keys workspace secrets are sealed with, id:base64key comma-separated (first seals); replaces the file's",
          replaces: ["keysFile"],
        },
      }),
    /** A file of `id:base64key` lines (a mounted secret), instead of `keys`. */
    keysFile: z
      .string()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "A file of id:base64key lines instead (a mounted secret), read at start-up. Env SANDPOOL_SECRETS_KEYS_FILE.",
        example: "/run/secrets/sandpool-secrets-keys",
        env: {
          name: "SANDPOOL_SECRETS_KEYS_FILE",
          description: "file of id:base64key lines workspace secrets are sealed with; replaces the file's",
          replaces: ["keys"],
        },
      }),
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
