/**
 * helm/sandpool/values.schema.json: it names every value values.yaml has, closes every object
 * it defines (additionalProperties: false), holds the gateway configuration's own schema for
 * `config`, and helm itself refuses a mistyped or unknown value with it before rendering
 * anything.
 *
 * Its `config` is generated from the gateway's zod schema (gatewayConfigSchema), less what
 * the chart takes from `secrets` and the roles' keys it sets per pod (`roles`). When the gateway's configuration changes, regenerate it:
 *   SANDPOOL_UPDATE_HELM_SCHEMA=1 npx vitest run test/unit/deploy/helm-values-schema.test.ts
 *   npx biome format --write helm/sandpool/values.schema.json
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Ajv } from "ajv";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { z } from "zod";
import { gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import { type SettingDoc, settingDocs } from "../../../src/contract/setting-docs.js";
import { readJson, readYaml, repoPath } from "./deploy-files.js";
import { CHART_DIR, renderChart } from "./helm-render.js";

interface Schema {
  type?: string | string[];
  description?: string;
  format?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  required?: string[];
}

const SCHEMA_FILE = "helm/sandpool/values.schema.json";

/**
 * The gateway configuration's JSON Schema (what the loader takes, defaults optional), without
 * the keys the chart fills from `secrets` (a secret must not land in the ConfigMap) and
 * without zod's own "starts_with" format (its pattern says the same). Cross-field rules stay
 * the gateway's, at start-up.
 */
function gatewayConfigJsonSchema(): Schema {
  const generated = z.toJSONSchema(gatewayConfigSchema, {
    io: "input",
    target: "draft-7",
    // Each setting's one-line documentation (src/contract/setting-docs.ts) as its description,
    // which editors show beside values.yaml; the rest of it is the loader's, not the chart's.
    metadata: settingDocs,
    override: ({ jsonSchema }) => {
      const { doc } = jsonSchema as Partial<SettingDoc>;
      for (const key of ["doc", "example", "active", "env"])
        delete (jsonSchema as Record<string, unknown>)[key];
      if (doc !== undefined) jsonSchema.description = doc;
    },
  }) as Schema & { $schema?: string };
  delete generated.$schema;
  const properties = generated.properties!;
  delete properties.databaseUrl;
  delete properties.redisUrl;
  const auth = properties.auth!.properties!;
  for (const key of ["jwtSecret", "jwtPublicKey", "jwksUrl"]) delete auth[key];
  delete auth.introspection!.properties!.clientSecret;
  const redis = properties.redis!.properties!;
  for (const key of ["password", "sentinelPassword"]) delete redis[key];
  delete properties.metrics!.properties!.token;
  // The role and the node's keys are the chart's to set per pod (roles.*: SANDPOOL_ROLE and
  // SANDPOOL_NODE_* on each workload, the node secrets from the Secret), not the shared file's.
  delete properties.role;
  delete properties.node;
  const stripFormats = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(stripFormats);
    else if (typeof node === "object" && node !== null) {
      if ((node as Schema).format === "starts_with") delete (node as Schema).format;
      Object.values(node).forEach(stripFormats);
    }
  };
  stripFormats(generated);
  return {
    description:
      "The gateway's configuration file, generated from its schema (test/unit/deploy/helm-values-schema.test.ts); secrets and the key source come from secrets.",
    ...generated,
  };
}

if (process.env.SANDPOOL_UPDATE_HELM_SCHEMA === "1") {
  const current = JSON.parse(readFileSync(repoPath(SCHEMA_FILE), "utf8")) as Schema;
  current.properties!.config = gatewayConfigJsonSchema();
  writeFileSync(repoPath(SCHEMA_FILE), `${JSON.stringify(current, null, 2)}\n`);
}

const schema = readJson<Schema>(SCHEMA_FILE);
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
    // Formats (uri) are helm's to check: the render test's helm runs assert them.
    const validate = new Ajv({ allErrors: true, strict: false, validateFormats: false }).compile(schema);
    expect(validate(values), JSON.stringify(validate.errors)).toBe(true);
  });

  it("names only values values.yaml holds, but for the gateway configuration's keys", () => {
    const { config: _config, global: _global, ...chartValues } = schema.properties!;
    expect(undocumented({ properties: chartValues }, values)).toEqual([]);
  });

  it("holds the gateway configuration's own schema, less the secrets", () => {
    // On a mismatch the gateway's configuration changed: regenerate (see the header).
    expect(schema.properties!.config).toEqual(gatewayConfigJsonSchema());
    expect(schema.properties!.config!.properties).not.toHaveProperty("databaseUrl");
    expect(schema.properties!.config!.properties!.auth!.properties).not.toHaveProperty("jwtSecret");
  });
});

describe("helm template with values.schema.json", () => {
  it("refuses mistyped and unknown values, naming each", async () => {
    const wrong = valuesFile("wrong.yaml", {
      replicaCount: "two",
      replicas: 2,
      ingress: { host: "sandpool.example.com" },
      hostDocker: { socketGroup: "docker" },
      config: {
        prot: 8080,
        auth: { audeince: "sandpool" },
        pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdel: 1, maxTotal: "20" }],
      },
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
      "at '/config/auth': additional properties 'audeince' not allowed",
      "/config/pools/0/maxTotal': got string, want integer",
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
    [{ roles: { enabled: true } }, "roles.enabled needs secrets.nodeSecrets"],
    [
      { roles: { enabled: true }, dind: { enabled: false }, secrets: { nodeSecrets: ["n".repeat(32)] } },
      "roles.enabled needs dind.enabled or hostDocker.enabled",
    ],
    [
      {
        roles: { enabled: true, edge: { autoscaling: { minReplicas: 5, maxReplicas: 3 } } },
        secrets: { nodeSecrets: ["n".repeat(32)] },
      },
      "roles.edge.autoscaling.maxReplicas must be at least minReplicas",
    ],
    [
      { roles: { enabled: true, edge: { replicas: 1 } } },
      "at '/roles/edge/replicas': minimum: got 1, want 2",
    ],
    [{ roles: { enabled: true }, secrets: { nodeSecrets: ["short"] } }, "at '/secrets/nodeSecrets/0'"],
    [{ roles: { enabled: true, nodes: {} } }, "at '/roles': additional properties 'nodes' not allowed"],
  ])("refuses values that cannot work: %j", async (content, message) => {
    const file = valuesFile(`refused-${message.replace(/\W+/g, "-")}.yaml`, content);
    await expect(renderChart([DEFAULT_VALUES, file])).rejects.toThrow(message);
  });
});
