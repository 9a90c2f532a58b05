/**
 * The documentation registered on the configuration's fields (src/contract/setting-docs.ts)
 * as the walk of the schema finds it: through the wrappers a field may have, once per field,
 * and with each environment variable landing on the field it is registered on.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { configEnvVariables } from "../../../src/config/config-env.js";
import { configSettings, settingsOf, sharedSettingDocs } from "../../../src/config/config-settings.js";
import { envBinding } from "../../../src/config/env-binding.js";
import { settingDocOf, settingDocs } from "../../../src/contract/setting-docs.js";

describe("settingDocOf", () => {
  it("finds the documentation registered on the field or on a schema it wraps", () => {
    const inner = z.number().register(settingDocs, { doc: "inner" });
    expect(settingDocOf(inner.optional().default(3))?.doc).toBe("inner");
    const outer = z.number().register(settingDocs, { doc: "inner too" }).default(1);
    expect(settingDocOf(outer.register(settingDocs, { doc: "outer" }))?.doc).toBe("outer");
    expect(settingDocOf(z.string())).toBeUndefined();
  });
});

describe("configSettings", () => {
  it("gives every setting documentation of its own", () => {
    expect(sharedSettingDocs()).toEqual([]);
    const undocumented = configSettings.filter(
      (setting) => !setting.doc && !setting.path.startsWith("runtime.docker.resourceClasses.<name>."),
    );
    expect(undocumented.map((setting) => setting.path)).toEqual([]);
  });

  it("reports one documented schema used by two fields", () => {
    const shared = z.number().default(1).register(settingDocs, { doc: "one of them" });
    const settings = settingsOf(z.strictObject({ a: shared, b: shared }));
    expect(sharedSettingDocs(settings)).toEqual(["b (shares its documentation with a)"]);
  });

  it("lists each environment variable once, on the field it sets", () => {
    const registered = configSettings.flatMap((setting) =>
      setting.doc?.env ? [[setting.doc.env.name, setting.path.replace("[]", "[default]")]] : [],
    );
    expect(new Set(registered.map(([name]) => name)).size).toBe(registered.length);
    expect(Object.fromEntries(registered)).toEqual(
      Object.fromEntries(configEnvVariables.map((variable) => [variable.name, variable.path])),
    );
  });
});

describe("envBinding", () => {
  it("sets a list's items only for the default image's pool", () => {
    const env = { name: "SANDPOOL_X", description: "a field of every item" };
    expect(() => envBinding(["hosts", "[]", "port"], z.number(), env)).toThrow(/only a field of pools\[\]/);
    expect(envBinding(["pools", "[]", "minIdle"], z.number(), env).path).toBe("pools[default].minIdle");
  });

  it("reads the text as the field's type says, unless the field says how", () => {
    const apply = (field: z.ZodType, value: string, parse?: (value: string) => unknown) => {
      const config: Record<string, unknown> = {};
      envBinding(["a"], field, { name: "X", description: "x", parse }).apply(config, value, new Map(), {});
      return config.a;
    };
    expect(apply(z.number().optional(), " 7 ")).toBe(7);
    expect(apply(z.array(z.string()).default([]), "a, b,,c")).toEqual(["a", "b", "c"]);
    expect(apply(z.boolean(), "on")).toBe(true);
    expect(apply(z.string(), " as is ")).toBe(" as is ");
    expect(apply(z.string(), "a\\nb", (value) => value.replace(/\\n/g, "\n"))).toBe("a\nb");
    expect(() => apply(z.number(), "seven")).toThrow(/expected a whole number/);
  });
});
