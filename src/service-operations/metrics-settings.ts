/**
 * `metrics`: who may read `/metrics`. Unset, it answers anyone who reaches the port (guard it
 * with the network: a NetworkPolicy, a loopback listener). With a token (given in the file, by
 * SANDPOOL_METRICS_TOKEN, or in a file of its own named by tokenFile, as a mounted secret is),
 * it answers only `Authorization: Bearer <token>`, on the gateway's port and a node's. The file
 * is read once, when the configuration is loaded.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { settingDocs } from "../contract/setting-docs.js";

/** A token shorter than this could be guessed; `openssl rand -hex 32` gives 64 characters. */
export const MIN_METRICS_TOKEN_BYTES = 32;

const tooShort = (token: string) => Buffer.byteLength(token) < MIN_METRICS_TOKEN_BYTES;
const TOO_SHORT = `must be ${MIN_METRICS_TOKEN_BYTES} bytes or more (e.g. \`openssl rand -hex 32\`)`;

export const metricsSettingsSchema = z
  .strictObject({
    /** The bearer token `/metrics` requires. */
    token: z
      .string()
      .refine((token) => !tooShort(token), TOO_SHORT)
      .optional()
      .register(settingDocs, {
        doc: "The bearer token /metrics requires, 32 bytes or more. Env SANDPOOL_METRICS_TOKEN.",
        example: "change-me-to-32-bytes-or-more-0123456789",
        env: {
          name: "SANDPOOL_METRICS_TOKEN",
          description: "bearer token /metrics requires (32 bytes or more); replaces the file's",
          replaces: ["tokenFile"],
        },
      }),
    /** A file holding the token (surrounding whitespace ignored), instead of `token`. */
    tokenFile: z
      .string()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "A file holding that token instead (a mounted secret), read at start-up. Env SANDPOOL_METRICS_TOKEN_FILE.",
        example: "/run/secrets/sandpool-metrics-token",
        env: {
          name: "SANDPOOL_METRICS_TOKEN_FILE",
          description: "file holding the bearer token /metrics requires; replaces the file's",
          replaces: ["token"],
        },
      }),
  })
  .prefault({})
  .transform((settings, ctx) => {
    if (settings.tokenFile === undefined) return settings;
    if (settings.token !== undefined) {
      ctx.addIssue({ code: "custom", path: ["tokenFile"], message: "set token or tokenFile, not both" });
      return z.NEVER;
    }
    let token: string;
    try {
      token = readFileSync(settings.tokenFile, "utf8").trim();
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      ctx.addIssue({
        code: "custom",
        path: ["tokenFile"],
        message: `${settings.tokenFile} cannot be read (${reason})`,
      });
      return z.NEVER;
    }
    if (tooShort(token)) {
      ctx.addIssue({
        code: "custom",
        path: ["tokenFile"],
        message: `the token in ${settings.tokenFile} ${TOO_SHORT}`,
      });
      return z.NEVER;
    }
    return { ...settings, token };
  });

export type MetricsSettings = z.output<typeof metricsSettingsSchema>;
