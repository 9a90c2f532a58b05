/**
 * How an environment variable lands in the raw config (config-env.ts has the table): where it
 * is set, how its text becomes a value (a whole number, a list, a flag), and the bindings
 * that set more than one place (an auth key source, the metrics token, the default pool).
 */
import { formatKeyPath } from "../contract/did-you-mean.js";

export interface EnvVariable {
  name: string;
  /** Where the value lands, as a config path (`pools[default].minIdle` is the default image's pool). */
  path: string;
  description: string;
}

/** A raw (unchecked) configuration object, as read from YAML. */
export type RawConfig = Record<string, unknown>;

export interface EnvBinding extends EnvVariable {
  /** Sets the value in `config`; throws EnvValueError for a value of the wrong form. */
  apply(config: RawConfig, value: string, sources: Map<string, string>, env: NodeJS.ProcessEnv): void;
}

export class EnvValueError extends Error {}

export const keySourceVariables = [
  "SANDPOOL_JWT_SECRET",
  "SANDPOOL_JWT_PUBLIC_KEY",
  "SANDPOOL_JWKS_URL",
] as const;
const keySourceKeys = ["jwtSecret", "jwtPublicKey", "jwksUrl"] as const;

function isPlainObject(value: unknown): value is RawConfig {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The object at `path` in `config`, created (replacing a non-object: env wins) when absent. */
export function objectAt(config: RawConfig, path: readonly string[]): RawConfig {
  let current = config;
  for (const key of path) {
    const next = current[key];
    if (!isPlainObject(next)) current[key] = {};
    current = current[key] as RawConfig;
  }
  return current;
}

export function setAt(
  config: RawConfig,
  path: readonly string[],
  value: unknown,
  sources: Map<string, string>,
  name: string,
) {
  objectAt(config, path.slice(0, -1))[path.at(-1)!] = value;
  sources.set(formatKeyPath(path), name);
}

export function envWholeNumber(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new EnvValueError(`expected a whole number, got '${value}'`);
  return Number(value.trim());
}

export function commaList(value: string): string[] {
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

export function envFlag(value: string): boolean {
  const normalized = value.trim().toLowerCase();
  if (["true", "1", "yes", "on"].includes(normalized)) return true;
  if (["false", "0", "no", "off"].includes(normalized)) return false;
  throw new EnvValueError(`expected true or false, got '${value}'`);
}

export function scalar(
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
export function keySource(
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
export function metricsToken(name: string, key: "token" | "tokenFile", description: string): EnvBinding {
  return inlineOrFile(name, ["metrics", key], key === "token" ? "tokenFile" : "token", description);
}

/**
 * A setting given inline or as a file (`metrics.token`/`tokenFile`, `secrets.keys`/`keysFile`):
 * the variable replaces the file's value and drops its alternative, so the two never clash.
 */
export function inlineOrFile(
  name: string,
  path: readonly [string, string],
  alternative: string,
  description: string,
): EnvBinding {
  return {
    name,
    path: path.join("."),
    description,
    apply: (config, value, sources) => {
      delete objectAt(config, [path[0]])[alternative];
      setAt(config, path, value, sources, name);
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

export function hasNoPools(config: RawConfig): boolean {
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

export function poolSetting(
  name: string,
  key: "minIdle" | "maxTotal" | "demand",
  description: string,
  convert: (value: string) => unknown = envWholeNumber,
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
