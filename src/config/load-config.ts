/**
 * Loads the gateway configuration: a YAML file (optional), the environment over it, then the
 * one schema. Every problem found on the way (YAML syntax, bad variables, schema issues) is
 * collected into one ConfigError, one line per problem with its path, so a deployment is fixed
 * in one round trip rather than one error per restart.
 */
import { readFileSync } from "node:fs";
import { parseDocument } from "yaml";
import type { z } from "zod";
import { formatKeyPath, unknownKeyMessage } from "../contract/did-you-mean.js";
import { applyEnvironment, configEnvVariables } from "./config-env.js";
import type { RawConfig } from "./env-binding.js";
import { type GatewayConfig, gatewayConfigSchema } from "./gateway-config.js";

export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[], origin: string) {
    super(
      `invalid configuration (${origin}): ${problems.length} problem${problems.length === 1 ? "" : "s"}\n${problems
        .map((problem) => `  - ${problem}`)
        .join("\n")}`,
    );
    this.name = "ConfigError";
    this.problems = problems;
  }
}

export interface LoadConfigOptions {
  /** YAML file (`--config`); without one the configuration comes from the environment alone. */
  file?: string;
  env: NodeJS.ProcessEnv;
}

export interface LoadedConfig {
  config: GatewayConfig;
  /** The environment variables that were applied over the file. */
  fromEnvironment: string[];
}

/** The file as a raw object, or the problems that kept it from being one. */
export function readConfigFile(file: string): { config: RawConfig; problems: string[] } {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    return {
      config: {},
      problems: [
        `${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      ],
    };
  }
  const document = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0)
    return {
      config: {},
      problems: document.errors.map((error) => `${file}: ${error.message.split("\n")[0]!.replace(/:$/, "")}`),
    };
  const value: unknown = document.toJS({ maxAliasCount: 100 });
  if (value === null || value === undefined) return { config: {}, problems: [] };
  if (typeof value !== "object" || Array.isArray(value))
    return {
      config: {},
      problems: [
        `${file}: must be a YAML mapping of settings (found ${Array.isArray(value) ? "a list" : typeof value})`,
      ],
    };
  return { config: value as RawConfig, problems: [] };
}

/** The variables to name beside a schema issue: the one that set the value, or that could. */
function envHint(path: string, message: string, sources: ReadonlyMap<string, string>): string {
  for (const [source, name] of sources) {
    if (path === source || path.startsWith(`${source}.`) || path.startsWith(`${source}[`))
      return ` (from ${name})`;
  }
  const couldSet = configEnvVariables.filter((variable) => {
    // A missing value, or a rule about keys of this object that a variable could set.
    if (variable.path === path) return message.startsWith("required");
    const parent = variable.path.slice(0, variable.path.lastIndexOf("."));
    const key = variable.path.slice(variable.path.lastIndexOf(".") + 1);
    return parent === path && new RegExp(`\\b${key}\\b`).test(message);
  });
  return couldSet.length === 0 ? "" : ` (or set ${couldSet.map((v) => v.name).join(", ")})`;
}

/** One line per problem: `path: message`, unknown keys with a did-you-mean. */
export function formatSchemaIssues(
  issues: readonly z.core.$ZodIssue[],
  sources: ReadonlyMap<string, string> = new Map(),
): string[] {
  const lines: string[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const path = formatKeyPath([...issue.path, key]);
        lines.push(`${path}: ${unknownKeyMessage(gatewayConfigSchema, issue.path, key)}`);
      }
      continue;
    }
    const path = formatKeyPath(issue.path) || "(top level)";
    let message = issue.message;
    if (issue.code === "invalid_type" && /received undefined$/.test(message))
      message = `required (expected ${issue.expected})`;
    lines.push(`${path}: ${message}${envHint(path, message, sources)}`);
  }
  return [...new Set(lines)];
}

/** Like loadGatewayConfig, also saying which environment variables were applied. */
export function loadGatewayConfigWithSources(options: LoadConfigOptions): LoadedConfig {
  const file = options.file === undefined ? { config: {}, problems: [] } : readConfigFile(options.file);
  const origin = options.file === undefined ? "environment" : `${options.file} and environment`;
  const overlay = applyEnvironment(file.config, options.env);
  const problems = [...file.problems, ...overlay.problems];
  // Without the file, schema issues would only repeat that its settings are missing.
  if (file.problems.length > 0) throw new ConfigError(problems, origin);
  // A missing auth section is reported as the missing key source it is, not as "expected object".
  // A node verifies no token: without a key source (a file shared with the edges still has their
  // claims and audience) its auth section is not read at all, so the token keys can stay off nodes.
  if (overlay.config.role !== "node") overlay.config.auth ??= {};
  else if (!hasKeySource(overlay.config.auth)) delete overlay.config.auth;
  const result = gatewayConfigSchema.safeParse(overlay.config);
  if (!result.success) problems.push(...formatSchemaIssues(result.error.issues, overlay.sources));
  if (problems.length > 0 || !result.success) throw new ConfigError(problems, origin);
  return { config: result.data, fromEnvironment: overlay.applied };
}

function hasKeySource(auth: unknown): boolean {
  if (typeof auth !== "object" || auth === null) return false;
  return ["jwtSecret", "jwtPublicKey", "jwksUrl"].some((key) => (auth as RawConfig)[key] !== undefined);
}

/**
 * The gateway configuration from `file` (YAML) with the environment over it. Throws one
 * ConfigError listing every problem.
 */
export function loadGatewayConfig(options: LoadConfigOptions): GatewayConfig {
  return loadGatewayConfigWithSources(options).config;
}
