import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  applyEnvironment,
  configEnvVariables,
  otherSandpoolVariables,
} from "../../../src/config/config-env.js";
import type { GatewayConfig } from "../../../src/config/gateway-config.js";
import { loadGatewayConfig } from "../../../src/config/load-config.js";
import { problemsOf } from "./config-problems.js";

const IMAGE = "sandpool/sandbox:dev";
const JWKS = "https://issuer.example/.well-known/jwks.json";
const SECRET = "a-test-secret-that-is-at-least-32-bytes-long";
const scratch = mkdtempSync(path.join(tmpdir(), "sandpool-config-env-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
/** A mounted secret: the metrics token in a file of its own, with the usual trailing newline. */
const metricsTokenFile = path.join(scratch, "metrics-token");
writeFileSync(metricsTokenFile, "a-metrics-token-read-from-its-own-file\n");
const secretsKeys = `k1:${Buffer.alloc(32, 7).toString("base64")}`;
const secretsKeysFile = path.join(scratch, "secrets-keys");
writeFileSync(secretsKeysFile, `${secretsKeys}\n`);

/** The smallest environment that configures a gateway on its own. */
const baseEnv = { SANDPOOL_JWKS_URL: JWKS, SANDPOOL_DEFAULT_IMAGE: IMAGE };

function fromEnv(env: NodeJS.ProcessEnv): GatewayConfig {
  return loadGatewayConfig({ env: { ...baseEnv, ...env } });
}

const publicKeyPem = generateKeyPairSync("ed25519").publicKey.export({
  type: "spki",
  format: "pem",
}) as string;

/** The three introspection variables, each completed by the other two (the block needs all three). */
const introspectionEnv = {
  SANDPOOL_INTROSPECTION_URL: "https://platform.example/introspect",
  SANDPOOL_INTROSPECTION_CLIENT_ID: "sandpool",
  SANDPOOL_INTROSPECTION_CLIENT_SECRET: "s3cret",
};

/** A Sentinel and a Cluster deployment, for the variables that refine one. */
const redisSentinelEnv = { SANDPOOL_REDIS_SENTINELS: "s-1:26379", SANDPOOL_REDIS_SENTINEL_NAME: "mymaster" };
const redisClusterEnv = { SANDPOOL_REDIS_CLUSTER_NODES: "redis-0:6379" };

/** One case per variable: a value and what it must become (`with`: other variables it needs). */
const cases: Record<
  string,
  { value: string; expect: (config: GatewayConfig) => void; with?: NodeJS.ProcessEnv }
> = {
  DATABASE_URL: {
    value: "postgres://u:p@db:5432/sandpool",
    expect: (c) => expect(c.databaseUrl).toBe("postgres://u:p@db:5432/sandpool"),
  },
  REDIS_URL: { value: "redis://redis:6379", expect: (c) => expect(c.redisUrl).toBe("redis://redis:6379") },
  SANDPOOL_REDIS_SENTINELS: {
    value: "s-1:26379, s-2:26379",
    with: { SANDPOOL_REDIS_SENTINEL_NAME: "mymaster" },
    expect: (c) => expect(c.redis?.sentinels).toEqual(["s-1:26379", "s-2:26379"]),
  },
  SANDPOOL_REDIS_SENTINEL_NAME: {
    value: "primary",
    with: redisSentinelEnv,
    expect: (c) => expect(c.redis?.sentinelName).toBe("primary"),
  },
  SANDPOOL_REDIS_SENTINEL_PASSWORD: {
    value: "s3ntinel",
    with: redisSentinelEnv,
    expect: (c) => expect(c.redis?.sentinelPassword).toBe("s3ntinel"),
  },
  SANDPOOL_REDIS_CLUSTER_NODES: {
    value: "redis-0:6379,[fd00::1]:6379",
    expect: (c) => expect(c.redis?.cluster?.nodes).toEqual(["redis-0:6379", "[fd00::1]:6379"]),
  },
  SANDPOOL_REDIS_USERNAME: {
    value: "sandpool",
    with: redisClusterEnv,
    expect: (c) => expect(c.redis?.username).toBe("sandpool"),
  },
  SANDPOOL_REDIS_PASSWORD: {
    value: "pa55",
    with: redisClusterEnv,
    expect: (c) => expect(c.redis?.password).toBe("pa55"),
  },
  SANDPOOL_REDIS_TLS: {
    value: "true",
    with: redisClusterEnv,
    expect: (c) => expect(c.redis?.tls).toBe(true),
  },
  SANDPOOL_ROLE: { value: "edge", expect: (c) => expect(c.role).toBe("edge") },
  SANDPOOL_NODE_HOST: { value: "10.0.0.5", expect: (c) => expect(c.node.host).toBe("10.0.0.5") },
  SANDPOOL_NODE_PORT: { value: "9091", expect: (c) => expect(c.node.port).toBe(9091) },
  SANDPOOL_NODE_ADVERTISE_URL: {
    value: "http://10.0.0.5:8091",
    expect: (c) => expect(c.node.advertiseUrl).toBe("http://10.0.0.5:8091"),
  },
  SANDPOOL_NODE_ID: { value: "box-1", expect: (c) => expect(c.node.id).toBe("box-1") },
  SANDPOOL_NODE_SECRETS: {
    value: `${"a".repeat(32)}, ${"b".repeat(40)}`,
    expect: (c) => expect(c.node.secrets).toEqual(["a".repeat(32), "b".repeat(40)]),
  },
  SANDPOOL_HOST: { value: "0.0.0.0", expect: (c) => expect(c.host).toBe("0.0.0.0") },
  SANDPOOL_PORT: { value: "9000", expect: (c) => expect(c.port).toBe(9000) },
  SANDPOOL_BASE_PATH: { value: "/v1/sandbox", expect: (c) => expect(c.basePath).toBe("/v1/sandbox") },
  SANDPOOL_ALLOWED_HOSTS: {
    value: "sandpool.internal, .svc.cluster.local,,",
    expect: (c) => expect(c.http.allowedHosts).toEqual(["sandpool.internal", ".svc.cluster.local"]),
  },
  SANDPOOL_ALLOWED_ORIGINS: {
    value: "https://console.example",
    expect: (c) => expect(c.http.allowedOrigins).toEqual(["https://console.example"]),
  },
  SANDPOOL_DEPLOYMENT: { value: "prod-eu", expect: (c) => expect(c.deployment).toBe("prod-eu") },
  SANDPOOL_RUNTIME: { value: "process", expect: (c) => expect(c.runtime.kind).toBe("process") },
  DOCKER_HOST: {
    value: "unix:///run/engine-2/docker.sock",
    expect: (c) => expect(c.runtime.docker?.hosts).toEqual(["unix:///run/engine-2/docker.sock"]),
  },
  DOCKER_TLS_VERIFY: {
    value: "1",
    expect: (c) =>
      expect(c.runtime.docker?.tls).toEqual({
        caFile: path.join(homedir(), ".docker", "ca.pem"),
        certFile: path.join(homedir(), ".docker", "cert.pem"),
        keyFile: path.join(homedir(), ".docker", "key.pem"),
      }),
  },
  SANDPOOL_ADMIN_HOST: {
    value: "10.1.2.3",
    expect: (c) => expect(c.adminListener).toEqual({ host: "10.1.2.3", port: 8081 }),
  },
  SANDPOOL_ADMIN_PORT: {
    value: "9091",
    expect: (c) => expect(c.adminListener).toEqual({ host: "127.0.0.1", port: 9091 }),
  },
  SANDPOOL_JWT_ANY_AUDIENCE: { value: "true", expect: (c) => expect(c.auth?.anyAudience).toBe(true) },
  SANDPOOL_JWT_MAX_TOKEN_AGE_SECONDS: {
    value: "3600",
    expect: (c) => expect(c.auth?.maxTokenAgeSeconds).toBe(3600),
  },
  SANDPOOL_PYTHON: {
    value: "/usr/bin/python3",
    expect: (c) => expect(c.runtime.python).toBe("/usr/bin/python3"),
  },
  SANDPOOL_JWT_SECRET: {
    value: SECRET,
    expect: (c) => {
      expect(c.auth?.jwtSecret).toBe(SECRET);
      expect(c.auth?.jwksUrl).toBeUndefined();
    },
  },
  SANDPOOL_JWT_PUBLIC_KEY: {
    value: publicKeyPem.replace(/\n/g, "\\n"),
    expect: (c) => {
      expect(c.auth?.jwtPublicKey).toBe(publicKeyPem);
      expect(c.auth?.algorithms).toContain("EdDSA");
    },
  },
  SANDPOOL_JWKS_URL: {
    value: "https://other.example/jwks",
    expect: (c) => expect(c.auth?.jwksUrl).toBe("https://other.example/jwks"),
  },
  SANDPOOL_JWT_ISSUER: {
    value: "https://issuer.example/",
    expect: (c) => expect(c.auth?.issuer).toBe("https://issuer.example/"),
  },
  SANDPOOL_JWT_AUDIENCE: { value: "sandpool", expect: (c) => expect(c.auth?.audience).toBe("sandpool") },
  SANDPOOL_WORKSPACE_CLAIM: { value: "org.id", expect: (c) => expect(c.auth?.workspaceClaim).toBe("org.id") },
  SANDPOOL_INTROSPECTION_URL: {
    value: "http://127.0.0.1:9999/introspect",
    with: introspectionEnv,
    expect: (c) => expect(c.auth?.introspection?.url).toBe("http://127.0.0.1:9999/introspect"),
  },
  SANDPOOL_INTROSPECTION_CLIENT_ID: {
    value: "gateway-7",
    with: introspectionEnv,
    expect: (c) => expect(c.auth?.introspection?.clientId).toBe("gateway-7"),
  },
  SANDPOOL_INTROSPECTION_CLIENT_SECRET: {
    value: "other-secret",
    with: introspectionEnv,
    expect: (c) =>
      expect(c.auth?.introspection).toMatchObject({
        clientSecret: "other-secret",
        workspaceField: "workspace_id",
      }),
  },
  SANDPOOL_INTROSPECTION_AUDIENCE: {
    value: "sandpool",
    with: introspectionEnv,
    expect: (c) => expect(c.auth?.introspection?.audience).toBe("sandpool"),
  },
  SANDPOOL_INTROSPECTION_ALLOWED_CLIENT_IDS: {
    value: "agent-runner, notebooks",
    with: introspectionEnv,
    expect: (c) => expect(c.auth?.introspection?.allowedClientIds).toEqual(["agent-runner", "notebooks"]),
  },
  SANDPOOL_INTROSPECTION_ANY_AUDIENCE: {
    value: "true",
    with: introspectionEnv,
    expect: (c) => expect(c.auth?.introspection?.anyAudience).toBe(true),
  },
  SANDPOOL_CONSOLE_ENABLED: { value: "false", expect: (c) => expect(c.console.enabled).toBe(false) },
  SANDPOOL_METRICS_TOKEN: {
    value: "a-metrics-token-of-at-least-32-bytes-0123",
    expect: (c) => expect(c.metrics.token).toBe("a-metrics-token-of-at-least-32-bytes-0123"),
  },
  SANDPOOL_METRICS_TOKEN_FILE: {
    value: metricsTokenFile,
    expect: (c) =>
      expect(c.metrics).toEqual({
        tokenFile: metricsTokenFile,
        token: "a-metrics-token-read-from-its-own-file",
      }),
  },
  SANDPOOL_SECRETS_KEYS: {
    value: secretsKeys,
    expect: (c) => expect(c.secrets.keys).toBe(secretsKeys),
  },
  SANDPOOL_SECRETS_KEYS_FILE: {
    value: secretsKeysFile,
    expect: (c) => expect(c.secrets).toEqual({ keysFile: secretsKeysFile, keys: `${secretsKeys}\n` }),
  },
  SANDPOOL_DEFAULT_IMAGE: {
    value: "registry.example/sandbox:2",
    expect: (c) => {
      expect(c.policy.defaultImage).toBe("registry.example/sandbox:2");
      expect(c.policy.allowedImages).toEqual(["registry.example/sandbox:2"]);
      expect(c.pools).toEqual([
        expect.objectContaining({ name: "default", image: "registry.example/sandbox:2" }),
      ]);
    },
  },
  SANDPOOL_MIN_IDLE: { value: "5", expect: (c) => expect(c.pools[0]!.minIdle).toBe(5) },
  SANDPOOL_MAX_TOTAL: { value: "50", expect: (c) => expect(c.pools[0]!.maxTotal).toBe(50) },
  SANDPOOL_POOL_DEMAND: { value: "off", expect: (c) => expect(c.pools[0]!.demand).toBe(false) },
  SANDPOOL_MAX_WARMUP_STARTS: { value: "3", expect: (c) => expect(c.limits.maxWarmupStarts).toBe(3) },
  SANDPOOL_SHUTDOWN_GRACE_MS: { value: "5000", expect: (c) => expect(c.shutdownGraceMs).toBe(5000) },
  SANDPOOL_MIGRATE_ON_START: { value: "true", expect: (c) => expect(c.migrateOnStart).toBe(true) },
  SANDPOOL_RETENTION_USAGE_EVENTS_DAYS: {
    value: "7",
    expect: (c) => expect(c.retention.usageEventsDays).toBe(7),
  },
  SANDPOOL_EGRESS_CA_CERT_FILE: {
    value: "/run/ca/tls.crt",
    with: { SANDPOOL_EGRESS_CA_KEY_FILE: "/run/ca/tls.key" },
    expect: (c) => expect(c.egress.caCertFile).toBe("/run/ca/tls.crt"),
  },
  SANDPOOL_EGRESS_CA_KEY_FILE: {
    value: "/run/ca/tls.key",
    with: { SANDPOOL_EGRESS_CA_CERT_FILE: "/run/ca/tls.crt" },
    expect: (c) => expect(c.egress.caKeyFile).toBe("/run/ca/tls.key"),
  },
  SANDPOOL_EGRESS_UPSTREAM_CA_FILES: {
    value: "/etc/ca/a.pem, /etc/ca/b.pem",
    expect: (c) => expect(c.egress.upstreamCaFiles).toEqual(["/etc/ca/a.pem", "/etc/ca/b.pem"]),
  },
  SANDPOOL_RETENTION_AUDIT_DAYS: { value: "90", expect: (c) => expect(c.retention.auditDays).toBe(90) },
  SANDPOOL_USAGE_JOURNAL_DIR: {
    value: "/var/lib/sandpool/usage-journal",
    expect: (c) => expect(c.usageBacklog.journalDir).toBe("/var/lib/sandpool/usage-journal"),
  },
  SANDPOOL_USAGE_BACKLOG_NOT_READY_ABOVE: {
    value: "5000",
    expect: (c) => expect(c.usageBacklog.notReadyAbove).toBe(5000),
  },
};

describe("environment variables", () => {
  it("has a test case for every variable in the table", () => {
    expect(Object.keys(cases).sort()).toEqual(configEnvVariables.map((v) => v.name).sort());
  });

  for (const variable of configEnvVariables) {
    it(`${variable.name} sets ${variable.path}`, () => {
      const entry = cases[variable.name]!;
      const env: NodeJS.ProcessEnv = { ...baseEnv, ...entry.with, [variable.name]: entry.value };
      // A key source replaces the base one: two would be a conflict.
      if (["SANDPOOL_JWKS_URL", "SANDPOOL_JWT_SECRET", "SANDPOOL_JWT_PUBLIC_KEY"].includes(variable.name)) {
        delete env.SANDPOOL_JWKS_URL;
        env[variable.name] = entry.value;
      }
      entry.expect(loadGatewayConfig({ env }));
    });
  }

  it("documents every variable", () => {
    for (const variable of configEnvVariables) {
      expect(variable.description.length, variable.name).toBeGreaterThan(10);
      expect(variable.path, variable.name).toMatch(/^[a-zA-Z[\]]/);
    }
  });

  it("treats an empty variable as unset", () => {
    expect(fromEnv({ SANDPOOL_PORT: "", SANDPOOL_HOST: "" })).toMatchObject({
      port: 8080,
      host: "127.0.0.1",
    });
  });

  it("splits a comma-separated DOCKER_HOST into several engines", () => {
    expect(
      fromEnv({
        DOCKER_HOST: "unix:///var/run/docker.sock, tcp://10.0.0.5:2376",
        DOCKER_TLS_VERIFY: "1",
        DOCKER_CERT_PATH: "/etc/docker-certs",
      }).runtime.docker?.hosts,
    ).toEqual(["unix:///var/run/docker.sock", "tcp://10.0.0.5:2376"]);
  });

  it("reads Docker's TLS files from DOCKER_CERT_PATH when DOCKER_TLS_VERIFY is on", () => {
    const config = fromEnv({
      DOCKER_HOST: "tcp://engine.example:2376",
      DOCKER_TLS_VERIFY: "1",
      DOCKER_CERT_PATH: "/etc/docker-certs",
    });
    expect(config.runtime.docker?.tls).toEqual({
      caFile: "/etc/docker-certs/ca.pem",
      certFile: "/etc/docker-certs/cert.pem",
      keyFile: "/etc/docker-certs/key.pem",
    });
  });

  it("refuses a tcp:// DOCKER_HOST without TLS, naming both ways out", () => {
    for (const off of [{}, { DOCKER_TLS_VERIFY: "0" }]) {
      const problems = problemsOf(() => fromEnv({ DOCKER_HOST: "tcp://engine.example:2375", ...off }));
      expect(problems.join("\n")).toMatch(/tcp:\/\/engine\.example:2375 would be reached without TLS/);
      expect(problems.join("\n")).toMatch(/runtime\.docker\.tls .*DOCKER_TLS_VERIFY.*allowInsecureTcp: true/);
    }
  });

  it("keeps the file's other docker options when DOCKER_HOST sets the engines", () => {
    const { config } = applyEnvironment(
      { runtime: { docker: { hosts: ["unix:///a.sock"], network: "n" } } },
      { DOCKER_HOST: "tcp://b:2375" },
    );
    expect(config.runtime).toEqual({ docker: { hosts: ["tcp://b:2375"], network: "n" } });
  });

  it("does not change the object it was given", () => {
    const file = { port: 1, auth: { jwtSecret: SECRET } };
    applyEnvironment(file, { SANDPOOL_PORT: "2", SANDPOOL_JWKS_URL: JWKS });
    expect(file).toEqual({ port: 1, auth: { jwtSecret: SECRET } });
  });

  it("reports which variables it applied, in order", () => {
    const overlay = applyEnvironment({}, { SANDPOOL_PORT: "1", REDIS_URL: "redis://r", PATH: "/bin" });
    expect(overlay.applied).toEqual(["REDIS_URL", "SANDPOOL_PORT"]);
    expect(overlay.sources.get("port")).toBe("SANDPOOL_PORT");
  });
});

describe("values of the wrong form", () => {
  it.each(["abc", "80.5", "-1", "8080x", "1e3"])("SANDPOOL_PORT=%s is refused by name", (value) => {
    expect(problemsOf(() => fromEnv({ SANDPOOL_PORT: value }))).toEqual([
      `SANDPOOL_PORT: expected a whole number, got '${value}'`,
    ]);
  });

  it("names the variable when the schema refuses its value", () => {
    expect(problemsOf(() => fromEnv({ SANDPOOL_PORT: "70000" }))).toEqual([
      "port: Too big: expected number to be <=65535 (from SANDPOOL_PORT)",
    ]);
  });

  it("refuses SANDPOOL_MIN_IDLE and SANDPOOL_MAX_TOTAL that are not whole numbers", () => {
    expect(problemsOf(() => fromEnv({ SANDPOOL_MIN_IDLE: "two", SANDPOOL_MAX_TOTAL: "" }))).toEqual([
      "SANDPOOL_MIN_IDLE: expected a whole number, got 'two'",
    ]);
  });

  it("refuses a SANDPOOL_RUNTIME other than docker or process", () => {
    const [problem] = problemsOf(() => fromEnv({ SANDPOOL_RUNTIME: "podman" }));
    expect(problem).toMatch(
      /^runtime\.kind: Invalid option: expected one of "docker"\|"process" \(from SANDPOOL_RUNTIME\)$/,
    );
  });

  it("refuses a SANDPOOL_MIGRATE_ON_START that is not a boolean", () => {
    expect(problemsOf(() => fromEnv({ SANDPOOL_MIGRATE_ON_START: "sure" }))).toEqual([
      "SANDPOOL_MIGRATE_ON_START: expected true or false, got 'sure'",
    ]);
    expect(fromEnv({ SANDPOOL_MIGRATE_ON_START: "0" }).migrateOnStart).toBe(false);
  });

  it("collects every problem of the environment at once", () => {
    const problems = problemsOf(() =>
      fromEnv({ SANDPOOL_PORT: "x", SANDPOOL_MIN_IDEL: "1", SANDPOOL_JWT_SECRET: "short" }),
    );
    expect(problems).toEqual([
      "SANDPOOL_MIN_IDEL: unknown variable, did you mean 'SANDPOOL_MIN_IDLE'?",
      "SANDPOOL_JWT_SECRET, SANDPOOL_JWKS_URL: set only one of these key source variables",
      "SANDPOOL_PORT: expected a whole number, got 'x'",
      "auth.jwtSecret: jwtSecret must be at least 32 bytes (from SANDPOOL_JWT_SECRET)",
    ]);
  });
});

describe("unknown SANDPOOL_ variables", () => {
  it("are errors with a did-you-mean", () => {
    expect(problemsOf(() => fromEnv({ SANDPOOL_MIN_IDEL: "3" }))).toEqual([
      "SANDPOOL_MIN_IDEL: unknown variable, did you mean 'SANDPOOL_MIN_IDLE'?",
    ]);
    expect(problemsOf(() => fromEnv({ SANDPOOL_JWKS_URI: JWKS }))).toEqual([
      "SANDPOOL_JWKS_URI: unknown variable, did you mean 'SANDPOOL_JWKS_URL'?",
    ]);
    expect(problemsOf(() => fromEnv({ SANDPOOL_BASEPATH: "/x" }))).toEqual([
      "SANDPOOL_BASEPATH: unknown variable, did you mean 'SANDPOOL_BASE_PATH'?",
    ]);
  });

  it("are errors without a suggestion when nothing is close", () => {
    expect(problemsOf(() => fromEnv({ SANDPOOL_COLOUR: "blue" }))).toEqual([
      "SANDPOOL_COLOUR: unknown variable (`sandpool config example` lists the ones sandpool reads)",
    ]);
  });

  it("are errors even when empty: the name is the typo", () => {
    expect(problemsOf(() => fromEnv({ SANDPOOL_MAX_TOTL: "" }))).toEqual([
      "SANDPOOL_MAX_TOTL: unknown variable, did you mean 'SANDPOOL_MAX_TOTAL'?",
    ]);
  });

  it("allow the ones other parts of sandpool read", () => {
    const others = Object.fromEntries(otherSandpoolVariables.map((name) => [name, "x"]));
    expect(otherSandpoolVariables).toEqual(expect.arrayContaining(["SANDPOOL_LOG_LEVEL", "SANDPOOL_TOKEN"]));
    expect(() =>
      fromEnv({ ...others, SANDPOOL_TEST_DATABASE_URL: "postgres://x", SANDPOOL_TEST_ANYTHING: "1" }),
    ).not.toThrow();
  });

  it("leave variables without the prefix alone", () => {
    expect(() => fromEnv({ SANDPOOLX: "1", HOME: "/root", sandpool_port: "x" })).not.toThrow();
  });
});

describe("auth key source from the environment", () => {
  const file = { auth: { jwtSecret: SECRET, issuer: "https://file.example/" } };

  it("replaces the file's key source instead of adding a second one", () => {
    const { config } = applyEnvironment(file, { SANDPOOL_JWKS_URL: JWKS });
    expect(config.auth).toEqual({ jwksUrl: JWKS, issuer: "https://file.example/" });
  });

  it("switches a file's secret to a public key", () => {
    const { config } = applyEnvironment(
      { auth: { jwksUrl: JWKS } },
      { SANDPOOL_JWT_PUBLIC_KEY: publicKeyPem.replace(/\n/g, "\\n") },
    );
    expect(config.auth).toEqual({ jwtPublicKey: publicKeyPem });
  });

  it("leaves the file's key source alone when no key variable is set", () => {
    const { config } = applyEnvironment(file, { SANDPOOL_JWT_AUDIENCE: "aud" });
    expect(config.auth).toEqual({ ...file.auth, audience: "aud" });
  });

  it("refuses two key source variables at once (and applies only the first, to say it once)", () => {
    const overlay = applyEnvironment(file, { SANDPOOL_JWT_SECRET: SECRET, SANDPOOL_JWKS_URL: JWKS });
    expect(overlay.problems).toEqual([
      "SANDPOOL_JWT_SECRET, SANDPOOL_JWKS_URL: set only one of these key source variables",
    ]);
    expect(overlay.config.auth).toEqual({ jwtSecret: SECRET, issuer: "https://file.example/" });
  });

  it("keeps a public key that already has real newlines", () => {
    const { config } = applyEnvironment({}, { SANDPOOL_JWT_PUBLIC_KEY: publicKeyPem });
    expect((config.auth as Record<string, unknown>).jwtPublicKey).toBe(publicKeyPem);
  });
});

describe("default image and its pool", () => {
  const file = {
    policy: { allowedImages: ["a:1", "b:1"], defaultImage: "a:1" },
    pools: [
      { name: "pool-a", image: "a:1", minIdle: 1, maxTotal: 4 },
      { name: "pool-b", image: "b:1" },
    ],
  };

  it("adds SANDPOOL_DEFAULT_IMAGE to the allowed images once", () => {
    expect(applyEnvironment(file, { SANDPOOL_DEFAULT_IMAGE: "b:1" }).config.policy).toEqual({
      allowedImages: ["a:1", "b:1"],
      defaultImage: "b:1",
    });
    expect(applyEnvironment(file, { SANDPOOL_DEFAULT_IMAGE: "c:1" }).config.policy).toEqual({
      allowedImages: ["a:1", "b:1", "c:1"],
      defaultImage: "c:1",
    });
  });

  it("keeps the file's pools and leaves a new image without one to the schema's error", () => {
    const overlay = applyEnvironment(file, { SANDPOOL_DEFAULT_IMAGE: "c:1" });
    expect(overlay.config.pools).toEqual(file.pools);
  });

  it("sets minIdle and maxTotal of the pool serving the default image", () => {
    const { config } = applyEnvironment(file, { SANDPOOL_MIN_IDLE: "3", SANDPOOL_MAX_TOTAL: "9" });
    expect(config.pools).toEqual([
      { name: "pool-a", image: "a:1", minIdle: 3, maxTotal: 9 },
      { name: "pool-b", image: "b:1" },
    ]);
  });

  it("follows SANDPOOL_DEFAULT_IMAGE to the pool of that image", () => {
    const { config, sources } = applyEnvironment(file, {
      SANDPOOL_DEFAULT_IMAGE: "b:1",
      SANDPOOL_MIN_IDLE: "0",
    });
    expect(config.pools).toEqual([file.pools[0], { name: "pool-b", image: "b:1", minIdle: 0 }]);
    expect(sources.get("pools[1].minIdle")).toBe("SANDPOOL_MIN_IDLE");
  });

  it("creates pool 'default' for the file's default image when the file has no pools", () => {
    const { config: raw } = applyEnvironment(
      { policy: { allowedImages: ["a:1"], defaultImage: "a:1" } },
      { SANDPOOL_MIN_IDLE: "1", SANDPOOL_MAX_TOTAL: "3" },
    );
    expect(raw.pools).toEqual([{ name: "default", image: "a:1", minIdle: 1, maxTotal: 3 }]);
  });

  it("configures a whole gateway from the environment alone", () => {
    const config = fromEnv({ SANDPOOL_MIN_IDLE: "0", SANDPOOL_MAX_TOTAL: "4" });
    expect(config.policy).toMatchObject({ allowedImages: [IMAGE], defaultImage: IMAGE });
    expect(config.pools).toEqual([
      {
        name: "default",
        image: IMAGE,
        resourceClass: "standard",
        minIdle: 0,
        maxTotal: 4,
        warmupConcurrency: 2,
        demand: true,
        isolation: "container",
        coldStartTimeoutMs: 30_000,
        startQueueTimeoutMs: 120_000,
        egress: false,
      },
    ]);
  });

  it("explains SANDPOOL_MIN_IDLE without a default image", () => {
    expect(applyEnvironment({}, { SANDPOOL_MIN_IDLE: "1" }).problems).toEqual([
      "SANDPOOL_MIN_IDLE: sets the default image's pool, but no default image is configured (set SANDPOOL_DEFAULT_IMAGE or policy.defaultImage)",
    ]);
  });

  it("explains SANDPOOL_MAX_TOTAL when no pool serves the default image", () => {
    const overlay = applyEnvironment(
      { policy: { allowedImages: ["a:1"], defaultImage: "a:1", resourceClass: "large" }, pools: file.pools },
      { SANDPOOL_MAX_TOTAL: "2" },
    );
    expect(overlay.problems).toEqual([
      "SANDPOOL_MAX_TOTAL: sets the default image's pool, but no pool serves 'a:1' in resource class 'large'",
    ]);
  });
});
