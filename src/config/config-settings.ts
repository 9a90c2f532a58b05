/**
 * Every setting of the configuration with its documentation, found by walking the schema: the
 * one source the example file (config-example.ts), the environment variables (config-env.ts)
 * and docs/configuration.md are rendered from. The documentation itself is registered on each
 * field (src/contract/setting-docs.ts), so nothing here is keyed by path by hand.
 */
import type { z } from "zod";
import { formatKeyPath, unwrap } from "../contract/did-you-mean.js";
import { type SettingDoc, settingDocOf } from "../contract/setting-docs.js";
import { gatewayConfigSchema } from "./gateway-config.js";

type Schema = z.core.$ZodType;

export interface Setting {
  /** `port`, `pools[].minIdle`, `runtime.docker.resourceClasses.<name>.cpus`. */
  path: string;
  /** The path's keys: `[]` stands for every item of a list, `*` for every entry of a map. */
  keys: readonly string[];
  /** The field as its object declares it (with its optional, default and the like). */
  field: Schema;
  doc: SettingDoc | undefined;
}

/** The alternatives a value may match (the options of a union), each unwrapped. */
function alternatives(schema: Schema): Schema[] {
  const inner = unwrap(schema);
  const def = (inner as z.core.$ZodTypes)._zod.def;
  return def.type === "union" ? def.options.flatMap(alternatives) : [inner];
}

/** The settings below `schema`, parents before their children, in the schema's key order. */
export function settingsOf(schema: Schema): Setting[] {
  const found: Setting[] = [];
  const visit = (node: Schema, parent: string[]) => {
    for (const candidate of alternatives(node)) {
      const def = (candidate as z.core.$ZodTypes)._zod.def;
      if (def.type === "object") {
        for (const [key, field] of Object.entries(def.shape)) {
          const keys = [...parent, key];
          found.push({ path: formatKeyPath(keys), keys, field, doc: settingDocOf(field) });
          visit(field, keys);
        }
      } else if (def.type === "array") visit(def.element, [...parent, "[]"]);
      else if (def.type === "record") visit(def.valueType, [...parent, "*"]);
    }
  };
  visit(schema, []);
  return found;
}

/** The gateway configuration's settings (gatewayConfigSchema). */
export const configSettings: readonly Setting[] = settingsOf(gatewayConfigSchema);

/** The documented settings by path, for lookups; derived from the schema, never written. */
export const fieldDocs: Readonly<Record<string, SettingDoc>> = Object.fromEntries(
  configSettings.flatMap((setting) => (setting.doc ? [[setting.path, setting.doc]] : [])),
);

/**
 * Documentation registered on a schema that more than one setting shares: `.register` marks
 * the instance, so each would show the other's comment. Fields must be instances of their own.
 */
export function sharedSettingDocs(settings: readonly Setting[] = configSettings): string[] {
  const seen = new Map<SettingDoc, string>();
  const shared: string[] = [];
  for (const { path, doc } of settings) {
    if (!doc) continue;
    const first = seen.get(doc);
    if (first !== undefined) shared.push(`${path} (shares its documentation with ${first})`);
    else seen.set(doc, path);
  }
  return shared;
}
