/**
 * Documentation of configuration settings, kept on the zod schemas themselves: each field of
 * the gateway's configuration is registered in `settingDocs` with its one-line comment, the
 * placeholder the example shows when it has no default, and the environment variable that
 * sets it. The example file, docs/configuration.md and the table of environment variables are
 * all rendered by walking the schema (src/config/config-settings.ts), so a setting cannot be
 * added without its documentation, nor documented under a path that does not exist.
 *
 * It sits in src/contract, the bottom layer, because the parts of the configuration are
 * defined where they are used (src/auth, src/policy-schema, src/store, src/runtime, ...), and
 * the lowest of them may import nothing higher.
 */
import { z } from "zod";

/** How an environment variable sets its field (applied by src/config/env-binding.ts). */
export interface SettingEnv {
  name: string;
  /** One line for the table of variables (`sandpool config example`, docs/configuration.md). */
  description: string;
  /**
   * Turns the text into the value; by default it follows the field's type: a whole number, a
   * comma-separated list, true/false (also 1/0, yes/no, on/off), or the text as it is.
   */
  parse?: (value: string) => unknown;
  /** Keys beside this one that the variable removes, so it wins over the file's alternative. */
  replaces?: readonly string[];
  /** What the variable does besides setting its field (src/config/env-binding.ts). */
  landing?: "defaultImage" | "dockerTlsVerify";
}

export interface SettingDoc {
  /** The setting's comment in the example file and its description in docs/configuration.md. */
  doc: string;
  /** Shown for a setting without a default (and used for a required one). */
  example?: unknown;
  /** Active in the example although optional (the one auth key source, so the file loads). */
  active?: boolean;
  env?: SettingEnv;
}

/** Register a field with `.register(settingDocs, { doc: ... })`, after its `.default()`/`.optional()`. */
export const settingDocs = z.registry<SettingDoc>();

type Schema = z.core.$ZodType;

/**
 * The documentation of a field: registered on the field itself or on a schema it wraps
 * (`.optional()`, `.default()`, `.prefault()` or a pipe's input around the registered one).
 */
export function settingDocOf(field: Schema): SettingDoc | undefined {
  let schema: Schema | undefined = field;
  for (let depth = 0; schema !== undefined && depth < 32; depth++) {
    const doc = settingDocs.get(schema);
    if (doc !== undefined) return doc;
    const def = (schema as z.core.$ZodTypes)._zod.def as { innerType?: Schema; in?: Schema };
    schema = def.innerType ?? def.in;
  }
  return undefined;
}
