import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { configEnvVariables } from "../../../src/config/config-env.js";
import { configExample, renderConfigExample } from "../../../src/config/config-example.js";
import { fieldDocs } from "../../../src/config/config-settings.js";
import { gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import { loadGatewayConfig } from "../../../src/config/load-config.js";
import { formatKeyPath, keyLocations } from "../../../src/contract/did-you-mean.js";

const dir = mkdtempSync(path.join(tmpdir(), "sandpool-example-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function loadText(text: string, name: string) {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return loadGatewayConfig({ file, env: {} });
}

/**
 * Turns every commented-out setting into an active one; prose comments stay, and so do the
 * settings named in `except` with everything nested below them.
 */
function uncomment(text: string, except: readonly string[]): string {
  let keptBelow: number | undefined; // the indent of an excepted block being kept
  return text
    .split("\n")
    .map((line) => {
      const indent = /^\s*/.exec(line)![0].length;
      if (keptBelow !== undefined && indent > keptBelow) return line;
      keptBelow = undefined;
      const match = /^(\s*)# ([A-Za-z]\w*:(?: .*)?)$/.exec(line);
      if (!match) return line;
      const key = match[2]!.slice(0, match[2]!.indexOf(":"));
      if (!except.includes(key)) return `${match[1]}${match[2]}`;
      keptBelow = indent;
      return line;
    })
    .join("\n");
}

/** Settings without a default: the example shows a placeholder for them. */
const withoutDefault = ["databaseUrl", "redisUrl"] as const;

describe("configExample", () => {
  const text = configExample();

  it("documents every setting of the schema", () => {
    expect(renderConfigExample().undocumented).toEqual([]);
  });

  it("documents no setting the schema does not have", () => {
    const known = new Set(
      keyLocations(gatewayConfigSchema).map(({ key, parent }) => formatKeyPath([...parent, key])),
    );
    // runtime.docker is an open record until the docker runtime's options schema is wired in.
    const stale = Object.keys(fieldDocs).filter(
      (name) => !known.has(name) && !name.startsWith("runtime.docker."),
    );
    expect(stale).toEqual([]);
  });

  it("loads as it is, with the defaults and its placeholders", () => {
    const config = loadText(text, "as-is.yaml");
    expect(config.auth?.jwksUrl).toBe("https://issuer.example/.well-known/jwks.json");
    expect(config.policy.allowedImages).toEqual([config.policy.defaultImage]);
    expect(config.pools).toEqual([
      expect.objectContaining({ name: "default", image: config.policy.defaultImage }),
    ]);
    for (const key of withoutDefault) expect(config[key]).toBeUndefined();
  });

  it("shows the true default of every commented-out setting", () => {
    const asIs = loadText(text, "as-is-2.yaml");
    const everything = loadText(
      uncomment(text, ["jwtSecret", "jwtPublicKey", "redis", "tokenFile", "keysFile"]),
      "uncommented.yaml",
    );
    expect(everything.databaseUrl).toMatch(/^postgres:\/\//);
    expect(everything.redisUrl).toMatch(/^redis:\/\//);
    expect(everything.auth?.issuer).toBeDefined();
    expect(everything.runtime.docker).toBeDefined();
    expect(everything.metrics.token).toBeDefined();
    expect(everything.secrets.keys).toBeDefined();
    const strip = (config: typeof asIs) => {
      // Settings without a default that switch something on when uncommented.
      const { databaseUrl: _d, redisUrl: _r, adminListener: _l, metrics: _t, secrets: _s, ...rest } = config;
      const {
        issuer: _i,
        audience: _a,
        algorithms: _g,
        maxTokenAgeSeconds: _m,
        introspection: _n,
        ...auth
      } = config.auth!;
      // Unset, the warm-up cap is the machine's CPU count.
      const { maxWarmupStarts: _w, ...limits } = config.limits;
      // Unset, a node is named after its host and advertises nothing (serve then refuses role node).
      const { advertiseUrl: _u, id: _id, ...node } = config.node;
      // Unset, the usage journal is under the OS temp directory, per deployment.
      const { journalDir: _j, ...usageBacklog } = config.usageBacklog;
      // Unset, the egress CA is made once and kept in Postgres.
      const { caCertFile: _c, caKeyFile: _k, ...egress } = config.egress;
      return { ...rest, auth, limits, node, usageBacklog, egress, runtime: { kind: config.runtime.kind } };
    };
    expect(strip(everything)).toEqual(strip(asIs));
  });

  it("offers Sentinel and Cluster as commented alternatives to redisUrl, each loading on its own", () => {
    const keep = ["jwtSecret", "jwtPublicKey", "redisUrl", "tokenFile", "keysFile"];
    const sentinel = loadText(uncomment(text, [...keep, "cluster"]), "sentinel.yaml");
    expect(sentinel.redis).toMatchObject({ sentinelName: "mymaster", sentinels: expect.any(Array) });
    const cluster = loadText(
      uncomment(text, [...keep, "sentinels", "sentinelName", "sentinelPassword"]),
      "cluster.yaml",
    );
    expect(cluster.redis?.cluster?.nodes).toEqual(["redis-0:6379", "redis-1:6379", "redis-2:6379"]);
  });

  it("offers each auth key source as a commented alternative", () => {
    expect(text).toMatch(/^ {2}# jwtSecret: \S+$/m);
    expect(text).toMatch(/^ {2}# jwtPublicKey: /m);
    expect(text).toMatch(/^ {2}jwksUrl: https:\/\/issuer\.example\/\.well-known\/jwks\.json$/m);
    const secretOnly = uncomment(text, [
      "jwtPublicKey",
      "algorithms",
      "redis",
      "tokenFile",
      "keysFile",
    ]).replace(/^ {2}jwksUrl: .*$/m, "");
    expect(loadText(secretOnly, "secret.yaml").auth?.algorithms).toEqual(["HS256"]);
  });

  it("gives every setting a one-line comment above it", () => {
    const lines = text.split("\n");
    lines.forEach((line, index) => {
      if (/^\s*(# )?(- )?[A-Za-z]\w*:/.test(line) && !/^#\s{2,}/.test(line)) {
        expect(lines[index - 1], `comment above '${line}'`).toMatch(/^\s*# \S/);
      }
    });
  });

  it("lists every environment variable", () => {
    for (const variable of configEnvVariables) {
      expect(text).toMatch(
        new RegExp(`^#\\s+${variable.name}\\s+${variable.path.replace(/[.[\]]/g, "\\$&")}: `, "m"),
      );
    }
  });

  it("is valid YAML whose only active keys are the required ones and the key source", () => {
    expect(Object.keys(parse(text) as object)).toEqual(["auth", "policy", "pools"]);
  });
});
