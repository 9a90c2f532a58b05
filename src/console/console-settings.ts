/**
 * `console`: the operator console at `/console` (docs/console.md), served wherever the admin
 * API is (the public listener, or the admin listener when it has its own). On by default: it
 * is static files, and everything it shows comes from the admin API with an admin token.
 */
import { z } from "zod";

export const consoleSettingsSchema = z
  .strictObject({
    /** Serve the console at /console. */
    enabled: z.boolean().default(true),
  })
  .prefault({});

export type ConsoleSettings = z.output<typeof consoleSettingsSchema>;
