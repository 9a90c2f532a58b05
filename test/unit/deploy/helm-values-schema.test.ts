/**
 * helm/sandpool/values.schema.json: it names every value values.yaml has, closes every object
 * it defines (additionalProperties: false), knows the gateway configuration's keys, and helm
 * itself refuses a mistyped or unknown value with it before rendering anything.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Ajv } from "ajv";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { gatewayConfigSchema, poolSpecSchema } from "../../../src/config/gateway-config.js";
import { readJson, readYaml } from "./deploy-files.js";
import { CHART_DIR, renderChart } from "./helm-render.js";

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  required?: string[];
}

const schema = readJson<Schema>("helm/sandpool/values.schema.json");
const values = readYaml<Record<string, unknown>>("helm/sandpool/values.yaml");
const DEFAULT_VALUES = path.join(CHART_DIR, "ci", "default-values.yaml");

const dir = mkdtempSync(path.join(tmpdir(), "sandpool-helm-schema-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function valuesFile(name: string, content: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, stringify(content));
  return file;
}

/** Every object schema with properties, by its path. */
function objectSchemas(node: Schema, at = ""): [string, Schema][] {
  const here: [string, Schema][] = node.properties ? [[at || "(root)", node]] : [];
  const children = Object.entries(node.properties ?? {}).flatMap(([key, child]) =>
    objectSchemas(child, at ? `${at}.${key}` : key),
  );
  return [...here, ...children, ...(node.items ? objectSchemas(node.items, `${at}[]`) : [])];
}

/** Paths of values.yaml that the schema does not name, where it lists an object's properties. */
function unnamed(value: unknown, node: Schema, at = ""): string[] {
  if (Array.isArray(value) && node.items)
    return value.flatMap((item, i) => unnamed(item, node.items!, `${at}[${i}]`));
  if (typeof value !== "object" || value === null || !node.properties) return [];
  return Object.entries(value).flatMap(([key, child]) => {
    const where = at ? `${at}.${key}` : key;
    const property = node.properties![key];
    return property ? unnamed(child, property, where) : [where];
  });
}

/** Properties the schema names that values.yaml does not hold (no default, no documentation). */
function undocumented(node: Schema, value: unknown, at = ""): string[] {
  if (!node.properties || typeof value !== "object" || value === null || Array.isArray(value)) return [];
  return Object.entries(node.properties).flatMap(([key, child]) => {
    const where = at ? `${at}.${key}` : key;
    if (!(key in value)) return [where];
    return undocumented(child, (value as Record<string, unknown>)[key], where);
  });
}

describe("values.schema.json", () => {
  it("closes every object it defines", () => {
    const open = objectSchemas(schema)
      .filter(([, node]) => node.additionalProperties !== false)
      .map(([where]) => where);
    expect(open).toEqual([]);
  });

  it("names every value of values.yaml, and values.yaml passes it", () => {
    expect(unnamed(values, schema)).toEqual([]);
    const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
    expect(validate(values), JSON.stringify(validate.errors)).toBe(true);
  });

  it("names only values values.yaml holds, but for the gateway configuration's keys", () => {
    const { config: _config, global: _global, ...chartValues } = schema.properties!;
    expect(undocumented({ properties: chartValues }, values)).toEqual([]);
  });

  it("knows every key of the gateway's configuration but the secrets, and of a pool", () => {
    const config = schema.properties!.config!;
    // A key the gateway adds must be added here too, or helm refuses values that use it.
    expect(Object.keys(config.properties!).sort()).toEqual(
      Object.keys(gatewayConfigSchema.shape)
        .filter((key) => key !== "databaseUrl" && key !== "redisUrl")
        .sort(),
    );
    expect(Object.keys(config.properties!.pools!.items!.properties!).sort()).toEqual(
      Object.keys(poolSpecSchema.shape).sort(),
    );
  });
});

describe("helm template with values.schema.json", () => {
  it("refuses mistyped and unknown values, naming each", async () => {
    const wrong = valuesFile("wrong.yaml", {
      replicaCount: "two",
      replicas: 2,
      ingress: { host: "sandpool.example.com" },
      hostDocker: { socketGroup: "docker" },
      config: { prot: 8080, pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdel: 1 }] },
    });
    const failure = await renderChart([DEFAULT_VALUES, wrong]).then(
      () => "rendered",
      (error: Error) => error.message,
    );
    expect(failure).toContain("values don't meet the specifications of the schema");
    for (const problem of [
      "/replicaCount': got string, want integer",
      "additional properties 'replicas' not allowed",
      "at '/ingress': additional properties 'host' not allowed",
      "/hostDocker/socketGroup': got string, want null or integer",
      "at '/config': additional properties 'prot' not allowed",
      "at '/config/pools/0': additional properties 'minIdel' not allowed",
    ])
      expect(failure).toContain(problem);
  });

  it.each([
    [{ dind: { enabled: false }, hostDocker: { enabled: true } }, "hostDocker.socketGroup is required"],
    [
      { hostDocker: { enabled: true, socketGroup: 999 }, dind: { enabled: true } },
      "set one of dind.enabled and hostDocker.enabled",
    ],
    [
      { dind: { enabled: false }, hostDocker: { enabled: true, socketGroup: 999 }, replicaCount: 2 },
      "hostDocker.enabled needs replicaCount: 1",
    ],
    [{ ingress: { enabled: true } }, "ingress.enabled needs ingress.hosts"],
  ])("refuses values that cannot work: %j", async (content, message) => {
    const file = valuesFile(`refused-${message.replace(/\W+/g, "-")}.yaml`, content);
    await expect(renderChart([DEFAULT_VALUES, file])).rejects.toThrow(message);
  });
});
