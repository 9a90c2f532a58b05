import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  ConfigError,
  loadGatewayConfig,
  loadGatewayConfigWithSources,
  readConfigFile,
} from "../../../src/config/load-config.js";
import { problemsOf } from "./config-problems.js";

const dir = mkdtempSync(path.join(tmpdir(), "sandpool-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCount = 0;
function yamlFile(text: string): string {
  const file = path.join(dir, `config-${++fileCount}.yaml`);
  writeFileSync(file, text);
  return file;
}

const SECRET = "a-test-secret-that-is-at-least-32-bytes-long";
const JWKS = "https://issuer.example/.well-known/jwks.json";

const minimal = `
auth:
  jwtSecret: ${SECRET}
policy:
  allowedImages: [img/a]
  defaultImage: img/a
pools:
  - name: a
    image: img/a
`;

const load = (text: string, env: NodeJS.ProcessEnv = {}) => loadGatewayConfig({ file: yamlFile(text), env });
const problems = (text: string, env: NodeJS.ProcessEnv = {}) => problemsOf(() => load(text, env));

describe("loadGatewayConfig", () => {
  it("loads a minimal file and fills in every default", () => {
    const config = load(minimal);
    expect(config).toMatchObject({
      host: "127.0.0.1",
      port: 8080,
      basePath: "",
      deployment: "sandpool",
      runtime: { kind: "docker" },
      shutdownGraceMs: 30_000,
      migrateOnStart: false,
      policyCacheTtlMs: 1_000,
      auth: { jwtSecret: SECRET, algorithms: ["HS256"], workspaceClaim: "workspace_id" },
      policy: { allowedImages: ["img/a"], defaultImage: "img/a", maxConcurrentSessions: 100 },
      pools: [{ name: "a", image: "img/a", minIdle: 2, maxTotal: 100, resourceClass: "standard" }],
    });
    expect(config.databaseUrl).toBeUndefined();
    expect(config.redisUrl).toBeUndefined();
    expect(config.runtime.docker).toBeUndefined();
    expect(config.runtime.python).toBeUndefined();
  });

  it("reads the new top-level settings from the file", () => {
    const config = load(`${minimal}
databaseUrl: postgres://db/sandpool
redisUrl: redis://redis:6379
runtime:
  kind: process
  python: /usr/bin/python3
  docker: { hosts: ["unix:///var/run/docker.sock"] }
shutdownGraceMs: 0
migrateOnStart: true
`);
    expect(config).toMatchObject({
      databaseUrl: "postgres://db/sandpool",
      redisUrl: "redis://redis:6379",
      runtime: {
        kind: "process",
        python: "/usr/bin/python3",
        docker: { hosts: ["unix:///var/run/docker.sock"] },
      },
      shutdownGraceMs: 0,
      migrateOnStart: true,
    });
  });

  it("lets the environment win over the file", () => {
    const { config, fromEnvironment } = loadGatewayConfigWithSources({
      file: yamlFile(`${minimal}port: 1234\nhost: 10.0.0.1\nredisUrl: redis://file\n`),
      env: { SANDPOOL_PORT: "5678", REDIS_URL: "redis://env", SANDPOOL_JWKS_URL: JWKS },
    });
    expect(config.port).toBe(5678);
    expect(config.host).toBe("10.0.0.1");
    expect(config.redisUrl).toBe("redis://env");
    expect(config.auth?.jwksUrl).toBe(JWKS);
    expect(config.auth?.jwtSecret).toBeUndefined();
    expect(fromEnvironment).toEqual(["REDIS_URL", "SANDPOOL_PORT", "SANDPOOL_JWKS_URL"]);
  });

  it("loads from the environment alone when there is no file", () => {
    const config = loadGatewayConfig({
      env: { SANDPOOL_JWT_SECRET: SECRET, SANDPOOL_DEFAULT_IMAGE: "img/x" },
    });
    expect(config.pools.map((p) => p.image)).toEqual(["img/x"]);
  });

  it("treats an empty file as no settings", () => {
    expect(problems("")).toEqual([
      "auth: configure exactly one of jwtSecret, jwtPublicKey, jwksUrl (none is set) (or set SANDPOOL_JWT_SECRET, SANDPOOL_JWT_PUBLIC_KEY, SANDPOOL_JWKS_URL)",
      "policy: required (expected object)",
      "pools: required (expected array)",
    ]);
  });
});

describe("unknown keys", () => {
  it("suggests the key meant, at every depth, with its path", () => {
    const text = minimal
      .replace("  defaultImage: img/a", "  defaultImage: img/a\n  maxConcurentSessions: 3")
      .replace("    image: img/a", "    image: img/a\n    minIdel: 1")
      .replace("auth:\n", "auth:\n  jwksUri: x\n");
    expect(problems(`${text}prot: 80\nlimits:\n  maxJsonBodyByte: 1\n`)).toEqual([
      "auth.jwksUri: unknown key, did you mean 'jwksUrl'?",
      "policy.maxConcurentSessions: unknown key, did you mean 'maxConcurrentSessions'?",
      "pools[0].minIdel: unknown key, did you mean 'minIdle'?",
      "limits.maxJsonBodyByte: unknown key, did you mean 'maxJsonBodyBytes'?",
      "prot: unknown key, did you mean 'port'?",
    ]);
  });

  it("maps snake_case keys to their camelCase names", () => {
    expect(problems(`${minimal}policy_cache_ttl_ms: 5\n`)).toEqual([
      "policy_cache_ttl_ms: unknown key, did you mean 'policyCacheTtlMs'?",
    ]);
  });

  it("says where a key from another section belongs", () => {
    expect(problems(`${minimal}minIdle: 1\n`)).toEqual([
      "minIdle: unknown key here ('minIdle' belongs under 'pools[]')",
    ]);
  });

  it("reports an unknown key without a suggestion when nothing is close", () => {
    expect(problems(`${minimal}runtime:\n  flavour: x\n`)).toEqual(["runtime.flavour: unknown key"]);
  });

  it("names several unknown keys of one object one per line", () => {
    expect(problems(`${minimal}intervals:\n  warm: 1\n  reap: 1\n`)).toEqual([
      "intervals.warm: unknown key, did you mean 'warmMs'?",
      "intervals.reap: unknown key, did you mean 'reapMs'?",
    ]);
  });
});

describe("one error listing every problem", () => {
  it("collects problems of the file, the environment and the schema", () => {
    let error: unknown;
    try {
      load(`${minimal.replace("name: a", "name: Bad Name")}port: "80"\n`, {
        SANDPOOL_MAX_TOTL: "1",
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toMatch(/^invalid configuration \(.*config-\d+\.yaml and environment\): \d+ problems\n/);
    expect(message).toContain("  - SANDPOOL_MAX_TOTL: unknown variable, did you mean 'SANDPOOL_MAX_TOTAL'?");
    expect(message).toContain("  - port: Invalid input: expected number, received string");
    expect(message).toContain("  - pools[0].name: pool names are lower-case letters, digits, - and _");
  });

  it("reports cross-field rules with their path", () => {
    expect(
      problems(minimal.replace("  - name: a\n", "  - name: a\n    minIdle: 9\n    maxTotal: 3\n")),
    ).toEqual(["pools[0]: minIdle cannot exceed maxTotal"]);
    expect(problems(minimal.replace("allowedImages: [img/a]", "allowedImages: [img/a, img/b]"))).toEqual([
      "pools: allowed image 'img/b' has no pool (without egress) in resource class 'standard'",
    ]);
  });

  it("reports auth rules with their path", () => {
    expect(
      problems(minimal.replace(`jwtSecret: ${SECRET}`, `jwtSecret: ${SECRET}\n  jwksUrl: ${JWKS}`)),
    ).toEqual([
      "auth: configure exactly one of jwtSecret, jwtPublicKey, jwksUrl (jwtSecret and jwksUrl are both set) (or set SANDPOOL_JWT_SECRET, SANDPOOL_JWT_PUBLIC_KEY, SANDPOOL_JWKS_URL)",
    ]);
    expect(problems(minimal.replace(`jwtSecret: ${SECRET}`, "jwtSecret: short"))).toEqual([
      "auth.jwtSecret: jwtSecret must be at least 32 bytes",
    ]);
  });

  it("hints at the variable that can set a missing value", () => {
    expect(problems(minimal.replace("  defaultImage: img/a\n", ""))).toEqual([
      "policy.defaultImage: required (expected string) (or set SANDPOOL_DEFAULT_IMAGE)",
    ]);
  });
});

describe("a node's auth (role node verifies no bearer token)", () => {
  const shared = minimal.replace(
    `auth:\n  jwtSecret: ${SECRET}\n`,
    "auth:\n  audience: sandpool\n  workspaceClaim: org\n",
  );

  it("loads a node without an auth section, and without a key source in a file shared with edges", () => {
    const bare = minimal.replace(`auth:\n  jwtSecret: ${SECRET}\n`, "");
    expect(load(bare, { SANDPOOL_ROLE: "node" }).auth).toBeUndefined();
    expect(load(shared, { SANDPOOL_ROLE: "node" }).auth).toBeUndefined();
  });

  it("still checks a node's key source when it is given one, and asks every other role for one", () => {
    expect(load(shared, { SANDPOOL_ROLE: "node", SANDPOOL_JWT_SECRET: SECRET }).auth?.jwtSecret).toBe(SECRET);
    expect(problems(shared, { SANDPOOL_ROLE: "node", SANDPOOL_JWT_SECRET: "short" })).toEqual([
      "auth.jwtSecret: jwtSecret must be at least 32 bytes (from SANDPOOL_JWT_SECRET)",
    ]);
    for (const role of ["edge", "all"])
      expect(problems(shared, { SANDPOOL_ROLE: role })).toEqual([
        "auth: configure exactly one of jwtSecret, jwtPublicKey, jwksUrl (none is set) (or set SANDPOOL_JWT_SECRET, SANDPOOL_JWT_PUBLIC_KEY, SANDPOOL_JWKS_URL)",
      ]);
  });
});

describe("metrics", () => {
  const TOKEN = "a-metrics-token-of-at-least-32-bytes-0123";

  it("is open unless a token is set, in the file, the environment or a file of its own", () => {
    expect(load(minimal).metrics).toEqual({});
    expect(load(`${minimal}metrics:\n  token: ${TOKEN}\n`).metrics.token).toBe(TOKEN);
    const file = yamlFile(`  ${TOKEN}-in-a-file\n`);
    expect(load(`${minimal}metrics:\n  tokenFile: ${file}\n`).metrics.token).toBe(`${TOKEN}-in-a-file`);
    // The environment's wins over whichever the file has.
    expect(
      load(`${minimal}metrics:\n  tokenFile: ${file}\n`, { SANDPOOL_METRICS_TOKEN: TOKEN }).metrics,
    ).toEqual({
      token: TOKEN,
    });
    expect(
      load(`${minimal}metrics:\n  token: ${TOKEN}\n`, { SANDPOOL_METRICS_TOKEN_FILE: file }).metrics.token,
    ).toBe(`${TOKEN}-in-a-file`);
  });

  it("refuses a short token, a file it cannot read or that holds a short one, and both at once", () => {
    expect(problems(minimal, { SANDPOOL_METRICS_TOKEN: "short" })).toEqual([
      "metrics.token: must be 32 bytes or more (e.g. `openssl rand -hex 32`) (from SANDPOOL_METRICS_TOKEN)",
    ]);
    const missing = path.join(dir, "no-such-token");
    expect(problems(`${minimal}metrics:\n  tokenFile: ${missing}\n`)).toEqual([
      `metrics.tokenFile: ${missing} cannot be read (ENOENT)`,
    ]);
    const short = yamlFile("short\n");
    expect(problems(`${minimal}metrics:\n  tokenFile: ${short}\n`)).toEqual([
      `metrics.tokenFile: the token in ${short} must be 32 bytes or more (e.g. \`openssl rand -hex 32\`)`,
    ]);
    expect(problems(`${minimal}metrics:\n  token: ${TOKEN}\n  tokenFile: ${short}\n`)).toEqual([
      "metrics.tokenFile: set token or tokenFile, not both",
    ]);
  });
});

describe("the file itself", () => {
  it("reports YAML syntax errors with the position", () => {
    const [problem, ...rest] = problems("port: [1, 2\nhost: x\n");
    expect(rest).toEqual([]);
    expect(problem).toMatch(/config-\d+\.yaml: .*line \d+, column \d+$/);
  });

  it("refuses duplicate keys", () => {
    expect(problems(`${minimal}port: 1\nport: 2\n`)[0]).toMatch(/Map keys must be unique/);
  });

  it("refuses a file that is not a mapping", () => {
    expect(problems("- a\n- b\n")).toEqual([
      expect.stringMatching(/must be a YAML mapping of settings \(found a list\)$/),
    ]);
    expect(problems("just words\n")).toEqual([expect.stringMatching(/found string\)$/)]);
  });

  it("says when the file cannot be read, and nothing else", () => {
    const missing = path.join(dir, "missing.yaml");
    expect(problemsOf(() => loadGatewayConfig({ file: missing, env: {} }))).toEqual([
      `${missing}: cannot be read (ENOENT)`,
    ]);
  });

  it("readConfigFile returns the raw mapping", () => {
    expect(readConfigFile(yamlFile("a: 1\nb: [x]\n"))).toEqual({ config: { a: 1, b: ["x"] }, problems: [] });
  });
});
