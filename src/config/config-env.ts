/**
 * Environment variables that override the configuration file, applied to the raw config before
 * the schema checks it. Each is registered on the field it sets, with its description (see
 * src/contract/setting-docs.ts; how each one lands there: env-binding.ts), and documented by
 * `sandpool config example`. A value that cannot be what its variable promises (a port that is
 * not a number) is reported under the variable's name; a misspelt `SANDPOOL_*` name is an
 * error too, since a silently ignored override is the typo we are guarding against.
 */
import { suggest } from "../contract/did-you-mean.js";
import { configSettings } from "./config-settings.js";
import {
  type EnvBinding,
  EnvValueError,
  type EnvVariable,
  envBinding,
  type RawConfig,
} from "./env-binding.js";

const PREFIX = "SANDPOOL_";

/**
 * In the order they are applied: the variables other tools read too (DATABASE_URL, REDIS_URL,
 * DOCKER_HOST) first, then sandpool's own, each in the order of the settings they set. Where
 * two touch the same place the later wins (a metrics token file over a token), and the default
 * image is set before its pool's sizes.
 */
const bindings: readonly EnvBinding[] = configSettings
  .flatMap((setting) => (setting.doc?.env ? [envBinding(setting.keys, setting.field, setting.doc.env)] : []))
  .sort((a, b) => Number(a.name.startsWith(PREFIX)) - Number(b.name.startsWith(PREFIX)));

/** The variables that each name the auth key source: setting two of them is a conflict. */
const keySourceVariables: readonly string[] = bindings
  .filter((binding) => ["auth.jwtSecret", "auth.jwtPublicKey", "auth.jwksUrl"].includes(binding.path))
  .map((binding) => binding.name);

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
    if (keySourcesSet.slice(1).includes(binding.name)) continue;
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
