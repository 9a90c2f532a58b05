/**
 * How an environment variable lands in the raw config: where it is set (the path of the field
 * it is registered on, src/contract/setting-docs.ts), how its text becomes a value (by the
 * field's type: a whole number, a list, a flag), and the variables that do more than set one
 * place (an auth key source, the metrics token, the default image and its pool, Docker's TLS).
 */
import { homedir } from "node:os";
import nodePath from "node:path";
import type { z } from "zod";
import { formatKeyPath, unwrap } from "../contract/did-you-mean.js";
import type { SettingEnv } from "../contract/setting-docs.js";

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

/** Sets a field of the default image's pool (`pools[default].minIdle`), found or created. */
function poolSetting(
  name: string,
  key: string,
  description: string,
  convert: (value: string) => unknown,
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

/** The default image: also allowed, and the image of pool `default` when the file has no pools. */
function defaultImage(name: string, keys: readonly string[], description: string): EnvBinding {
  return {
    name,
    path: keys.join("."),
    description,
    apply: (config, value, sources) => {
      const policy = objectAt(config, ["policy"]);
      setAt(config, keys, value, sources, name);
      const allowed = Array.isArray(policy.allowedImages) ? policy.allowedImages : [];
      if (!allowed.includes(value)) policy.allowedImages = [...allowed, value];
      if (hasNoPools(config)) {
        config.pools = [{ name: "default", image: value }];
        sources.set("pools[0].image", name);
      }
    },
  };
}

/** Docker's own DOCKER_TLS_VERIFY: true reads ca.pem, cert.pem and key.pem of DOCKER_CERT_PATH. */
function dockerTlsVerify(name: string, keys: readonly string[], description: string): EnvBinding {
  return {
    name,
    path: keys.join("."),
    description,
    apply: (config, value, sources, env) => {
      if (!envFlag(value)) return;
      const certPath = env.DOCKER_CERT_PATH || nodePath.join(homedir(), ".docker");
      const tls = {
        caFile: nodePath.join(certPath, "ca.pem"),
        certFile: nodePath.join(certPath, "cert.pem"),
        keyFile: nodePath.join(certPath, "key.pem"),
      };
      setAt(config, keys, tls, sources, name);
    },
  };
}

/** How a variable's text becomes its field's value when the field says nothing else. */
function parserFor(field: z.core.$ZodType): (value: string) => unknown {
  const type = (unwrap(field) as z.core.$ZodTypes)._zod.def.type;
  if (type === "number") return envWholeNumber;
  if (type === "array") return commaList;
  if (type === "boolean") return envFlag;
  return (value) => value;
}

/**
 * The binding of the variable registered on the field at `keys`. A field of a list's items
 * (`pools[].minIdle`) is set on the default image's pool: the one pool env can name.
 */
export function envBinding(keys: readonly string[], field: z.core.$ZodType, env: SettingEnv): EnvBinding {
  const { name, description } = env;
  const convert = env.parse ?? parserFor(field);
  if (env.landing === "defaultImage") return defaultImage(name, keys, description);
  if (env.landing === "dockerTlsVerify") return dockerTlsVerify(name, keys, description);
  if (keys.includes("[]")) {
    if (keys.length !== 3 || keys[0] !== "pools" || keys[1] !== "[]")
      throw new Error(`${name}: only a field of pools[] may be set for one item (${keys.join(".")})`);
    return poolSetting(name, keys[2]!, description, convert);
  }
  return {
    name,
    path: keys.join("."),
    description,
    apply: (config, value, sources) => {
      const converted = convert(value);
      // An alternative the file has (tokenFile for token, another key source) would clash.
      const parent = objectAt(config, keys.slice(0, -1));
      for (const other of env.replaces ?? []) delete parent[other];
      setAt(config, keys, converted, sources, name);
    },
  };
}
