/**
 * `console`: the operator console at `/console` (docs/console.md), served wherever the admin
 * API is (the public listener, or the admin listener when it has its own). On by default: it
 * is static files, and everything it shows comes from the admin API with an admin token.
 */
import { z } from "zod";
import { settingDocs } from "../contract/setting-docs.js";

export const consoleSettingsSchema = z
  .strictObject({
    /** Serve the console at /console. */
    enabled: z
      .boolean()
      .default(true)
      .register(settingDocs, {
        doc: "Serve the console (false: /console is an unknown route). Env SANDPOOL_CONSOLE_ENABLED.",
        env: {
          name: "SANDPOOL_CONSOLE_ENABLED",
          description: "serve the operator console at /console (true/false)",
        },
      }),
  })
  .prefault({});

export type ConsoleSettings = z.output<typeof consoleSettingsSchema>;
