import { describe, expect, it } from "vitest";
import { z } from "zod";
import { gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import {
  formatKeyPath,
  keyLocations,
  knownKeysAt,
  suggest,
  unknownKeyMessage,
} from "../../../src/contract/did-you-mean.js";

describe("suggest", () => {
  const keys = ["maxConcurrentSessions", "sessionsPerMinute", "maxFileBytes", "minIdle", "maxTotal"];

  it("finds a near spelling", () => {
    expect(suggest("maxConcurentSessions", keys)).toBe("maxConcurrentSessions");
    expect(suggest("minIdel", keys)).toBe("minIdle");
    expect(suggest("sessionPerMinute", keys)).toBe("sessionsPerMinute");
  });

  it("ignores case, _ and - (snake_case and kebab-case keys)", () => {
    expect(suggest("min_idle", keys)).toBe("minIdle");
    expect(suggest("max-total", keys)).toBe("maxTotal");
    expect(suggest("MAXFILEBYTES", keys)).toBe("maxFileBytes");
  });

  it("suggests nothing for a name that is not close", () => {
    expect(suggest("colour", keys)).toBeUndefined();
    expect(suggest("foo", ["port"])).toBeUndefined();
    expect(suggest("x", [])).toBeUndefined();
  });

  it("prefers the closest candidate", () => {
    expect(suggest("prot", ["port", "host"])).toBe("port");
    expect(suggest("hots", ["port", "host"])).toBe("host");
  });
});

describe("knownKeysAt", () => {
  const schema = z
    .strictObject({
      a: z.strictObject({ b: z.number(), c: z.string().default("x") }).prefault({ b: 1 }),
      list: z.array(z.strictObject({ d: z.string(), e: z.number().optional() })),
      piped: z
        .strictObject({ f: z.string() })
        .transform((v) => v)
        .optional(),
      either: z.union([z.strictObject({ g: z.string() }), z.strictObject({ h: z.string() })]),
      map: z.record(z.string(), z.strictObject({ i: z.number() })),
      lazy: z.lazy(() => z.strictObject({ j: z.number() })),
    })
    .superRefine(() => {});

  it("walks objects through refinements, prefault, pipes, arrays, unions, records and lazy", () => {
    expect(knownKeysAt(schema, [])).toEqual(["a", "list", "piped", "either", "map", "lazy"]);
    expect(knownKeysAt(schema, ["a"])).toEqual(["b", "c"]);
    expect(knownKeysAt(schema, ["list", 3])).toEqual(["d", "e"]);
    expect(knownKeysAt(schema, ["piped"])).toEqual(["f"]);
    expect(knownKeysAt(schema, ["either"])).toEqual(["g", "h"]);
    expect(knownKeysAt(schema, ["map", "anything"])).toEqual(["i"]);
    expect(knownKeysAt(schema, ["lazy"])).toEqual(["j"]);
  });

  it("returns nothing below a leaf or a missing key", () => {
    expect(knownKeysAt(schema, ["a", "b"])).toEqual([]);
    expect(knownKeysAt(schema, ["nope"])).toEqual([]);
  });

  it("knows the gateway schema at every nested level", () => {
    expect(knownKeysAt(gatewayConfigSchema, ["auth"])).toContain("jwksUrl");
    expect(knownKeysAt(gatewayConfigSchema, ["policy"])).toContain("maxConcurrentSessions");
    expect(knownKeysAt(gatewayConfigSchema, ["pools", 0])).toContain("minIdle");
    expect(knownKeysAt(gatewayConfigSchema, ["limits"])).toContain("maxJsonBodyBytes");
    expect(knownKeysAt(gatewayConfigSchema, ["runtime"])).toEqual(["kind", "docker", "python"]);
    expect(knownKeysAt(gatewayConfigSchema, [])).toEqual(
      expect.arrayContaining([
        "host",
        "port",
        "databaseUrl",
        "redisUrl",
        "shutdownGraceMs",
        "migrateOnStart",
      ]),
    );
  });
});

describe("keyLocations and unknownKeyMessage", () => {
  it("lists where each key belongs", () => {
    const locations = keyLocations(gatewayConfigSchema);
    expect(locations).toContainEqual({ key: "minIdle", parent: ["pools", "[]"] });
    expect(locations).toContainEqual({ key: "jwtSecret", parent: ["auth"] });
    expect(locations).toContainEqual({ key: "port", parent: [] });
  });

  it("suggests a near key at the same level first", () => {
    expect(unknownKeyMessage(gatewayConfigSchema, ["policy"], "maxConcurentSessions")).toBe(
      "unknown key, did you mean 'maxConcurrentSessions'?",
    );
  });

  it("says where a key that belongs elsewhere goes", () => {
    expect(unknownKeyMessage(gatewayConfigSchema, [], "allowedImages")).toBe(
      "unknown key here ('allowedImages' belongs under 'policy')",
    );
    expect(unknownKeyMessage(gatewayConfigSchema, [], "min_idle")).toBe(
      "unknown key here ('minIdle' belongs under 'pools[]')",
    );
    expect(unknownKeyMessage(gatewayConfigSchema, ["auth"], "port")).toBe(
      "unknown key here ('port' belongs at the top level)",
    );
  });

  it("says just 'unknown key' when nothing is close", () => {
    expect(unknownKeyMessage(gatewayConfigSchema, ["limits"], "zzzzzz")).toBe("unknown key");
  });
});

describe("formatKeyPath", () => {
  it("prints paths the way a person reads them", () => {
    expect(formatKeyPath(["pools", 0, "minIdle"])).toBe("pools[0].minIdle");
    expect(formatKeyPath(["pools", "[]", "name"])).toBe("pools[].name");
    expect(formatKeyPath(["runtime", "docker", "resourceClasses", "big one"])).toBe(
      'runtime.docker.resourceClasses["big one"]',
    );
    expect(formatKeyPath([])).toBe("");
  });
});
