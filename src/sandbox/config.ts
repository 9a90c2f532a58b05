/**
 * The sandbox server's settings: one schema, with the defaults a single container wants.
 * Ceilings are hard limits; defaults apply when a client sends no hint.
 */
import { z } from "zod";

const seconds = z.number().int().min(1);

export const sandboxConfigSchema = z
  .strictObject({
    host: z.string().default("127.0.0.1"),
    port: z.number().int().min(0).max(65535).default(8080),
    root: z.string().min(1),
    python: z.string().default("python3"),
    maxSessions: z.number().int().min(1).default(64),
    defaultIdleTimeoutSeconds: seconds.default(300),
    maxIdleTimeoutSeconds: seconds.default(3600),
    defaultMaxLifetimeSeconds: seconds.default(3600),
    maxLifetimeSeconds: seconds.default(86_400),
    defaultExecTimeoutSeconds: seconds.default(60),
    maxExecTimeoutSeconds: seconds.default(600),
    /** Per stream (stdout, stderr) and call; the rest is dropped with a marker. */
    maxOutputBytes: z
      .number()
      .int()
      .min(1024)
      .default(1024 * 1024),
    maxUploadBytes: z
      .number()
      .int()
      .min(1)
      .default(100 * 1024 * 1024),
    maxJsonBodyBytes: z
      .number()
      .int()
      .min(1024)
      .default(10 * 1024 * 1024),
    interruptGraceMs: z.number().int().min(0).default(2_000),
    reapIntervalMs: z.number().int().min(10).default(1_000),
    /** Start each session's Python interpreter at creation, so its first call is fast. */
    prewarmInterpreter: z.boolean().default(true),
  })
  .refine((c) => c.defaultIdleTimeoutSeconds <= c.maxIdleTimeoutSeconds, {
    message: "defaultIdleTimeoutSeconds exceeds maxIdleTimeoutSeconds",
  })
  .refine((c) => c.defaultMaxLifetimeSeconds <= c.maxLifetimeSeconds, {
    message: "defaultMaxLifetimeSeconds exceeds maxLifetimeSeconds",
  })
  .refine((c) => c.defaultExecTimeoutSeconds <= c.maxExecTimeoutSeconds, {
    message: "defaultExecTimeoutSeconds exceeds maxExecTimeoutSeconds",
  });

export type SandboxConfigInput = z.input<typeof sandboxConfigSchema>;
export type SandboxConfig = z.output<typeof sandboxConfigSchema>;

/** A hint is honoured up to the ceiling; no hint means the default. */
export function clampHint(hint: number | null | undefined, fallback: number, ceiling: number): number {
  return Math.min(hint ?? fallback, ceiling);
}
