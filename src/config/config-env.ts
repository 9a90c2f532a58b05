/**
 * Environment variables that override the configuration file: the table (documented by
 * `sandpool config example`) and how each one lands in the raw config before the schema
 * checks it. A value that cannot be what its variable promises (a port that is not a number)
 * is reported under the variable's name; a misspelt `SANDPOOL_*` name is an error too, since
 * a silently ignored override is the typo we are guarding against.
 */
import { homedir } from "node:os";
import path from "node:path";
import { formatKeyPath, suggest } from "../contract/did-you-mean.js";

export interface EnvVariable {
  name: string;
  /** Where the value lands, as a config path (`pools[default].minIdle` is the default image's pool). */
  path: string;
  description: string;
}

/** A raw (unchecked) configuration object, as read from YAML. */
export type RawConfig = Record<string, unknown>;

interface EnvBinding extends EnvVariable {
  /** Sets the value in `config`; throws EnvValueError for a value of the wrong form. */
  apply(config: RawConfig, value: string, sources: Map<string, string>, env: NodeJS.ProcessEnv): void;
}

class EnvValueError extends Error {}

const keySourceVariables = ["SANDPOOL_JWT_SECRET", "SANDPOOL_JWT_PUBLIC_KEY", "SANDPOOL_JWKS_URL"] as const;
const keySourceKeys = ["jwtSecret", "jwtPublicKey", "jwksUrl"] as const;

function isPlainObject(value: unknown): value is RawConfig {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The object at `path` in `config`, created (replacing a non-object: env wins) when absent. */
function objectAt(config: RawConfig, path: readonly string[]): RawConfig {
  let current = config;
  for (const key of path) {
    const next = current[key];
    if (!isPlainObject(next)) current[key] = {};
    current = current[key] as RawConfig;
  }
  return current;
}

function setAt(
  config: RawConfig,
  path: readonly string[],
  value: unknown,
  sources: Map<string, string>,
  name: string,
) {
  objectAt(config, path.slice(0, -1))[path.at(-1)!] = value;
  sources.set(formatKeyPath(path), name);
}

function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new EnvValueError(`expected a whole number, got '${value}'`);
  return Number(value.trim());
}

function commaList(value: string): string[] {
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

function flag(value: string): boolean {
  const normalized = value.trim().toLowerCase();
  if (["true", "1", "yes", "on"].includes(normalized)) return true;
  if (["false", "0", "no", "off"].includes(normalized)) return false;
  throw new EnvValueError(`expected true or false, got '${value}'`);
}

function scalar(
  name: string,
  path: string,
  description: string,
  convert: (value: string) => unknown = (value) => value,
): EnvBinding {
  const keys = path.split(".");
  return {
    name,
    path,
    description,
    apply: (config, value, sources) => setAt(config, keys, convert(value), sources, name),
  };
}

/** Sets one auth key source and drops the file's, so env can switch, say, from a secret to JWKS. */
function keySource(
  name: (typeof keySourceVariables)[number],
  description: string,
  convert = (v: string) => v,
) {
  const key = keySourceKeys[keySourceVariables.indexOf(name)]!;
  return {
    name,
    path: `auth.${key}`,
    description,
    apply: (config: RawConfig, value: string, sources: Map<string, string>) => {
      const auth = objectAt(config, ["auth"]);
      for (const other of keySourceKeys) delete auth[other];
      setAt(config, ["auth", key], convert(value), sources, name);
    },
  } satisfies EnvBinding;
}

/** Sets the metrics token or its file and drops the other, so env wins over whichever the file has. */
function metricsToken(name: string, key: "token" | "tokenFile", description: string): EnvBinding {
  return {
    name,
    path: `metrics.${key}`,
    description,
    apply: (config, value, sources) => {
      delete objectAt(config, ["metrics"])[key === "token" ? "tokenFile" : "token"];
      setAt(config, ["metrics", key], value, sources, name);
    },
  };
}

/** The pool serving the default image in the policy's resource class, as an index into `pools`. */
function defaultPoolIndex(config: RawConfig): number | undefined {
  const policy = isPlainObject(config.policy) ? config.policy : {};
  const image = policy.defaultImage;
  if (typeof image !== "string" || !Array.isArray(config.pools)) return undefined;
  const resourceClass = policy.resourceClass ?? "standard";
  const index = config.pools.findIndex(
    (pool) =>
      isPlainObject(pool) && pool.image === image && (pool.resourceClass ?? "standard") === resourceClass,
  );
  return index === -1 ? undefined : index;
}

function hasNoPools(config: RawConfig): boolean {
  return config.pools === undefined || (Array.isArray(config.pools) && config.pools.length === 0);
}

/**
 * The default image's pool; created as pool `default` when the file defines no pools at all.
 * A file that has pools but none for the default image keeps them: the schema then says which
 * image lacks a pool, rather than a pool appearing that nobody wrote.
 */
function defaultPool(config: RawConfig): { pool: RawConfig; index: number } {
  const policy = isPlainObject(config.policy) ? config.policy : {};
  const image = policy.defaultImage;
  if (typeof image !== "string")
    throw new EnvValueError(
      "sets the default image's pool, but no default image is configured (set SANDPOOL_DEFAULT_IMAGE or policy.defaultImage)",
    );
  if (hasNoPools(config)) config.pools = [{ name: "default", image }];
  const index = defaultPoolIndex(config);
  if (index === undefined)
    throw new EnvValueError(
      `sets the default image's pool, but no pool serves '${image}' in resource class '${String(policy.resourceClass ?? "standard")}'`,
    );
  return { pool: (config.pools as RawConfig[])[index]!, index };
}

function poolSetting(
  name: string,
  key: "minIdle" | "maxTotal" | "demand",
  description: string,
  convert: (value: string) => unknown = wholeNumber,
): EnvBinding {
  return {
    name,
    path: `pools[default].${key}`,
    description,
    apply: (config, value, sources) => {
      const converted = convert(value);
      const { pool, index } = defaultPool(config);
      pool[key] = converted;
      sources.set(formatKeyPath(["pools", index, key]), name);
    },
  };
}

const bindings: readonly EnvBinding[] = [
  scalar("DATABASE_URL", "databaseUrl", "Postgres connection URL (required by `sandpool serve`)"),
  scalar(
    "REDIS_URL",
    "redisUrl",
    "Redis URL of one server, rediss:// for TLS (serve needs this, or Sentinels, or a Cluster)",
  ),
  scalar(
    "SANDPOOL_REDIS_SENTINELS",
    "redis.sentinels",
    "Redis Sentinels to find the master through, host:port comma-separated",
    commaList,
  ),
  scalar("SANDPOOL_REDIS_SENTINEL_NAME", "redis.sentinelName", "master name the Sentinels monitor"),
  scalar("SANDPOOL_REDIS_SENTINEL_PASSWORD", "redis.sentinelPassword", "password of the Sentinels"),
  scalar(
    "SANDPOOL_REDIS_CLUSTER_NODES",
    "redis.cluster.nodes",
    "Redis Cluster seed nodes, host:port comma-separated",
    commaList,
  ),
  scalar("SANDPOOL_REDIS_USERNAME", "redis.username", "ACL user of the Sentinel master or the Cluster nodes"),
  scalar("SANDPOOL_REDIS_PASSWORD", "redis.password", "password of the Sentinel master or the Cluster nodes"),
  scalar("SANDPOOL_REDIS_TLS", "redis.tls", "TLS to the Sentinels and nodes (true/false)", flag),
  scalar("SANDPOOL_ROLE", "role", "what this process is: all (one host), edge or node"),
  scalar("SANDPOOL_NODE_HOST", "node.host", "address of the node API listener (role node)"),
  scalar("SANDPOOL_NODE_PORT", "node.port", "port of the node API listener (role node)", wholeNumber),
  scalar(
    "SANDPOOL_NODE_ADVERTISE_URL",
    "node.advertiseUrl",
    "URL edges reach this node's API at, e.g. http://10.0.0.5:8091 (required for role node)",
  ),
  scalar("SANDPOOL_NODE_ID", "node.id", "this node's id in the registry (default: the host name)"),
  scalar(
    "SANDPOOL_NODE_SECRETS",
    "node.secrets",
    "edge/node shared secrets, 32 bytes or more, comma-separated: the first signs, all verify",
    commaList,
  ),
  scalar("SANDPOOL_HOST", "host", "address to listen on"),
  scalar("SANDPOOL_PORT", "port", "port to listen on (a whole number)", wholeNumber),
  scalar(
    "SANDPOOL_ADMIN_HOST",
    "adminListener.host",
    "serve the admin API on its own listener, at this address",
  ),
  scalar(
    "SANDPOOL_ADMIN_PORT",
    "adminListener.port",
    "serve the admin API on its own listener, on this port (a whole number)",
    wholeNumber,
  ),
  scalar("SANDPOOL_BASE_PATH", "basePath", "also serve the contract under this path"),
  scalar(
    "SANDPOOL_ALLOWED_HOSTS",
    "http.allowedHosts",
    "Host names answered besides loopback names and IP addresses, comma-separated (* for any)",
    commaList,
  ),
  scalar(
    "SANDPOOL_ALLOWED_ORIGINS",
    "http.allowedOrigins",
    "browser origins allowed besides loopback ones, comma-separated (* for any)",
    commaList,
  ),
  scalar("SANDPOOL_DEPLOYMENT", "deployment", "label of the sandboxes this deployment owns"),
  scalar("SANDPOOL_RUNTIME", "runtime.kind", "sandbox runtime: docker or process"),
  {
    name: "DOCKER_HOST",
    path: "runtime.docker.hosts",
    description: "Docker endpoint(s), comma-separated: unix:///path.sock or tcp://host:port",
    apply: (config, value, sources) => {
      const hosts = value
        .split(",")
        .map((host) => host.trim())
        .filter((host) => host.length > 0);
      setAt(config, ["runtime", "docker", "hosts"], hosts, sources, "DOCKER_HOST");
    },
  },
  {
    name: "DOCKER_TLS_VERIFY",
    path: "runtime.docker.tls",
    description:
      "true: reach tcp:// engines over verified TLS with ca.pem, cert.pem, key.pem of DOCKER_CERT_PATH (default ~/.docker)",
    apply: (config, value, sources, env) => {
      if (!flag(value)) return;
      const certPath = env.DOCKER_CERT_PATH || path.join(homedir(), ".docker");
      const tls = {
        caFile: path.join(certPath, "ca.pem"),
        certFile: path.join(certPath, "cert.pem"),
        keyFile: path.join(certPath, "key.pem"),
      };
      setAt(config, ["runtime", "docker", "tls"], tls, sources, "DOCKER_TLS_VERIFY");
    },
  },
  scalar("SANDPOOL_PYTHON", "runtime.python", "Python interpreter of the process runtime's sandboxes"),
  keySource("SANDPOOL_JWT_SECRET", "HS256 secret (32 bytes at least); replaces the file's key source"),
  keySource(
    "SANDPOOL_JWT_PUBLIC_KEY",
    "PEM public key or public JWK (a literal \\n becomes a newline); replaces the file's key source",
    (value) => value.replace(/\\n/g, "\n"),
  ),
  keySource("SANDPOOL_JWKS_URL", "JWKS URL of the token issuer; replaces the file's key source"),
  scalar("SANDPOOL_JWT_ISSUER", "auth.issuer", "required iss claim"),
  scalar("SANDPOOL_JWT_AUDIENCE", "auth.audience", "required aud claim"),
  scalar(
    "SANDPOOL_JWT_ANY_AUDIENCE",
    "auth.anyAudience",
    "accept any aud claim (true/false); serve needs this or an audience",
    flag,
  ),
  scalar(
    "SANDPOOL_JWT_MAX_TOKEN_AGE_SECONDS",
    "auth.maxTokenAgeSeconds",
    "refuse tokens whose iat is older (or absent)",
    wholeNumber,
  ),
  scalar("SANDPOOL_WORKSPACE_CLAIM", "auth.workspaceClaim", "claim holding the workspace id"),
  scalar(
    "SANDPOOL_INTROSPECTION_URL",
    "auth.introspection.url",
    "RFC 7662 endpoint checking opaque bearer tokens (https, or http to loopback)",
  ),
  scalar("SANDPOOL_INTROSPECTION_CLIENT_ID", "auth.introspection.clientId", "client id sent to the endpoint"),
  scalar(
    "SANDPOOL_INTROSPECTION_CLIENT_SECRET",
    "auth.introspection.clientSecret",
    "client secret sent to the endpoint",
  ),
  scalar(
    "SANDPOOL_INTROSPECTION_AUDIENCE",
    "auth.introspection.audience",
    "the aud an introspected token must carry",
  ),
  scalar(
    "SANDPOOL_INTROSPECTION_ALLOWED_CLIENT_IDS",
    "auth.introspection.allowedClientIds",
    "client_ids an introspected token may be issued to, comma-separated",
    commaList,
  ),
  scalar(
    "SANDPOOL_INTROSPECTION_ANY_AUDIENCE",
    "auth.introspection.anyAudience",
    "accept introspected tokens of any aud (true/false); serve needs this, an audience or client ids",
    flag,
  ),
  metricsToken(
    "SANDPOOL_METRICS_TOKEN",
    "token",
    "bearer token /metrics requires (32 bytes or more); replaces the file's",
  ),
  metricsToken(
    "SANDPOOL_METRICS_TOKEN_FILE",
    "tokenFile",
    "file holding the bearer token /metrics requires; replaces the file's",
  ),
  {
    name: "SANDPOOL_DEFAULT_IMAGE",
    path: "policy.defaultImage",
    description:
      "default image; also added to policy.allowedImages, and the image of pool 'default' when the file has no pools",
    apply: (config, value, sources) => {
      const policy = objectAt(config, ["policy"]);
      setAt(config, ["policy", "defaultImage"], value, sources, "SANDPOOL_DEFAULT_IMAGE");
      const allowed = Array.isArray(policy.allowedImages) ? policy.allowedImages : [];
      if (!allowed.includes(value)) policy.allowedImages = [...allowed, value];
      if (hasNoPools(config)) {
        config.pools = [{ name: "default", image: value }];
        sources.set("pools[0].image", "SANDPOOL_DEFAULT_IMAGE");
      }
    },
  },
  poolSetting("SANDPOOL_MIN_IDLE", "minIdle", "warm containers of the default image's pool"),
  poolSetting("SANDPOOL_MAX_TOTAL", "maxTotal", "most containers of the default image's pool"),
  poolSetting(
    "SANDPOOL_POOL_DEMAND",
    "demand",
    "the default image's pool keeps more than minIdle warm under demand (true/false)",
    flag,
  ),
  scalar(
    "SANDPOOL_MAX_WARMUP_STARTS",
    "limits.maxWarmupStarts",
    "warm-up sandbox starts at once per replica, all pools together (default: CPU count)",
    wholeNumber,
  ),
  scalar(
    "SANDPOOL_SHUTDOWN_GRACE_MS",
    "shutdownGraceMs",
    "grace for in-flight requests on SIGTERM",
    wholeNumber,
  ),
  scalar(
    "SANDPOOL_RETENTION_USAGE_EVENTS_DAYS",
    "retention.usageEventsDays",
    "days raw usage events are kept once rolled up per day",
    wholeNumber,
  ),
  scalar("SANDPOOL_RETENTION_AUDIT_DAYS", "retention.auditDays", "days audit rows are kept", wholeNumber),
  scalar(
    "SANDPOOL_USAGE_BACKLOG_NOT_READY_ABOVE",
    "usageBacklog.notReadyAbove",
    "usage records waiting for Postgres past which /readyz answers not ready",
    wholeNumber,
  ),
  scalar(
    "SANDPOOL_USAGE_JOURNAL_DIR",
    "usageBacklog.journalDir",
    "directory of the usage journal (a volume that outlives the container)",
  ),
  scalar(
    "SANDPOOL_MIGRATE_ON_START",
    "migrateOnStart",
    "apply database migrations at start-up (true/false)",
    flag,
  ),
];

/** Every variable sandpool's configuration reads, in the order they are applied. */
export const configEnvVariables: readonly EnvVariable[] = bindings.map(({ name, path, description }) => ({
  name,
  path,
  description,
}));

/** `SANDPOOL_*` names read elsewhere (logging, the CLI, build scripts, test suites): not typos. */
export const otherSandpoolVariables: readonly string[] = [
  "SANDPOOL_LOG_LEVEL",
  "SANDPOOL_TOKEN",
  // `sandpool policy` (the admin CLI): where the gateway is and the admin token to use.
  "SANDPOOL_URL",
  "SANDPOOL_ADMIN_TOKEN",
  "SANDPOOL_DEBIAN_SOURCES",
  "SANDPOOL_DEBOOTSTRAP_CACHE",
  "SANDPOOL_DOCKERD_LOG",
  "SANDPOOL_DOCKERD_WAIT",
];
const otherSandpoolPrefixes = ["SANDPOOL_TEST_"];

export interface EnvironmentOverlay {
  /** The file's raw config with the environment applied (a copy; the input is not changed). */
  config: RawConfig;
  /** `NAME: message` for every variable that could not be applied or is unknown. */
  problems: string[];
  /** The variables that were applied, in order. */
  applied: string[];
  /** Config path (`pools[0].minIdle`) -> the variable that set it, to name it in schema errors. */
  sources: Map<string, string>;
}

const PREFIX = "SANDPOOL_";

function unknownVariables(env: NodeJS.ProcessEnv): string[] {
  const known = new Set([...configEnvVariables.map((v) => v.name), ...otherSandpoolVariables]);
  const sandpoolNames = [...known]
    .filter((name) => name.startsWith(PREFIX))
    .map((name) => name.slice(PREFIX.length));
  const problems: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith(PREFIX) || known.has(name)) continue;
    if (otherSandpoolPrefixes.some((prefix) => name.startsWith(prefix))) continue;
    // Compared without the shared prefix, or every SANDPOOL_ name would look alike.
    const near = suggest(name.slice(PREFIX.length), sandpoolNames);
    problems.push(
      near === undefined
        ? `${name}: unknown variable (\`sandpool config example\` lists the ones sandpool reads)`
        : `${name}: unknown variable, did you mean '${PREFIX}${near}'?`,
    );
  }
  return problems;
}

/**
 * Applies the environment over `fileConfig`: env wins. Empty variables count as unset, the way
 * `FOO=` in a compose file or a chart usually means "not configured".
 */
export function applyEnvironment(fileConfig: RawConfig, env: NodeJS.ProcessEnv): EnvironmentOverlay {
  const config = structuredClone(fileConfig);
  const sources = new Map<string, string>();
  const problems = unknownVariables(env);
  const applied: string[] = [];
  const isSet = (name: string) => env[name] !== undefined && env[name] !== "";

  const keySourcesSet = keySourceVariables.filter(isSet);
  if (keySourcesSet.length > 1)
    problems.push(`${keySourcesSet.join(", ")}: set only one of these key source variables`);

  for (const binding of bindings) {
    const value = env[binding.name];
    if (value === undefined || value === "") continue;
    // Of conflicting key sources only the first is applied: the conflict is reported above, and
    // the schema should not add that the file now has none.
    if (keySourcesSet.slice(1).includes(binding.name as (typeof keySourceVariables)[number])) continue;
    try {
      binding.apply(config, value, sources, env);
      applied.push(binding.name);
    } catch (error) {
      if (!(error instanceof EnvValueError)) throw error;
      problems.push(`${binding.name}: ${error.message}`);
    }
  }
  return { config, problems, applied, sources };
}
