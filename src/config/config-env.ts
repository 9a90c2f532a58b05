/**
 * Environment variables that override the configuration file: the table (documented by
 * `sandpool config example`), applied to the raw config before the schema checks it (how
 * each one lands there: env-binding.ts). A value that cannot be what its variable promises
 * (a port that is not a number) is reported under the variable's name; a misspelt
 * `SANDPOOL_*` name is an error too, since a silently ignored override is the typo we are
 * guarding against.
 */
import { homedir } from "node:os";
import path from "node:path";
import { suggest } from "../contract/did-you-mean.js";
import {
  commaList,
  type EnvBinding,
  EnvValueError,
  type EnvVariable,
  envFlag,
  envWholeNumber,
  hasNoPools,
  inlineOrFile,
  keySource,
  keySourceVariables,
  metricsToken,
  objectAt,
  poolSetting,
  type RawConfig,
  scalar,
  setAt,
} from "./env-binding.js";

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
  scalar("SANDPOOL_REDIS_TLS", "redis.tls", "TLS to the Sentinels and nodes (true/false)", envFlag),
  scalar("SANDPOOL_ROLE", "role", "what this process is: all (one host), edge or node"),
  scalar("SANDPOOL_NODE_HOST", "node.host", "address of the node API listener (role node)"),
  scalar("SANDPOOL_NODE_PORT", "node.port", "port of the node API listener (role node)", envWholeNumber),
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
  scalar("SANDPOOL_PORT", "port", "port to listen on (a whole number)", envWholeNumber),
  scalar(
    "SANDPOOL_ADMIN_HOST",
    "adminListener.host",
    "serve the admin API on its own listener, at this address",
  ),
  scalar(
    "SANDPOOL_ADMIN_PORT",
    "adminListener.port",
    "serve the admin API on its own listener, on this port (a whole number)",
    envWholeNumber,
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
      if (!envFlag(value)) return;
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
    envFlag,
  ),
  scalar(
    "SANDPOOL_JWT_MAX_TOKEN_AGE_SECONDS",
    "auth.maxTokenAgeSeconds",
    "refuse tokens whose iat is older (or absent)",
    envWholeNumber,
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
    envFlag,
  ),
  scalar(
    "SANDPOOL_CONSOLE_ENABLED",
    "console.enabled",
    "serve the operator console at /console (true/false)",
    envFlag,
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
  inlineOrFile(
    "SANDPOOL_SECRETS_KEYS",
    ["secrets", "keys"],
    "keysFile",
    "keys workspace secrets are sealed with, id:base64key comma-separated (first seals); replaces the file's",
  ),
  inlineOrFile(
    "SANDPOOL_SECRETS_KEYS_FILE",
    ["secrets", "keysFile"],
    "keys",
    "file of id:base64key lines workspace secrets are sealed with; replaces the file's",
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
    envFlag,
  ),
  scalar(
    "SANDPOOL_MAX_WARMUP_STARTS",
    "limits.maxWarmupStarts",
    "warm-up sandbox starts at once per replica, all pools together (default: CPU count)",
    envWholeNumber,
  ),
  scalar(
    "SANDPOOL_SHUTDOWN_GRACE_MS",
    "shutdownGraceMs",
    "grace for in-flight requests on SIGTERM",
    envWholeNumber,
  ),
  scalar(
    "SANDPOOL_RETENTION_USAGE_EVENTS_DAYS",
    "retention.usageEventsDays",
    "days raw usage events are kept once rolled up per day",
    envWholeNumber,
  ),
  scalar(
    "SANDPOOL_EGRESS_CA_CERT_FILE",
    "egress.caCertFile",
    "PEM certificate of the egress CA sandboxes trust (with SANDPOOL_EGRESS_CA_KEY_FILE)",
  ),
  scalar("SANDPOOL_EGRESS_CA_KEY_FILE", "egress.caKeyFile", "PEM private key of the egress CA"),
  scalar(
    "SANDPOOL_EGRESS_UPSTREAM_CA_FILES",
    "egress.upstreamCaFiles",
    "extra PEM CA files the egress proxy trusts for upstream servers, comma-separated",
    commaList,
  ),
  scalar("SANDPOOL_RETENTION_AUDIT_DAYS", "retention.auditDays", "days audit rows are kept", envWholeNumber),
  scalar(
    "SANDPOOL_USAGE_BACKLOG_NOT_READY_ABOVE",
    "usageBacklog.notReadyAbove",
    "usage records waiting for Postgres past which /readyz answers not ready",
    envWholeNumber,
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
    envFlag,
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
