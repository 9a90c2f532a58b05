/**
 * `sandpool config`: print a complete example configuration, or check one the way the gateway
 * loads it (the YAML file, then environment variables over it) and show the effective result
 * with secrets redacted. Problems exit with code 2, the code for a usage/configuration error.
 * With --json, each prints an object instead (problems too, besides their lines on stderr).
 */
import { Command } from "commander";
import { printJson } from "../admin/admin-render.js";

export const CONFIG_ERROR_EXIT_CODE = 2;
const REDACTED = "<redacted>";
// Names that end in a secret word (jwtSecret, apiToken, access_token), not names that merely
// contain one: auth.verifiedTokenCacheSeconds is a duration.
const secretKey = /(secrets?|password|passphrase|token|privatekey|credentials?)$/i;

/** A URL's password and secret-looking query parameters hidden; anything else as it is. */
function redactUrl(value: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return value;
  }
  let changed = false;
  if (url.password) {
    url.password = "redacted";
    changed = true;
  }
  for (const key of [...url.searchParams.keys()]) {
    if (secretKey.test(key)) {
      url.searchParams.set(key, "redacted");
      changed = true;
    }
  }
  return changed ? url.toString() : value;
}

/**
 * A copy of the configuration safe to print: values under secret-looking keys (jwtSecret, any
 * password or token) replaced, and passwords in URLs (databaseUrl, redisUrl) hidden.
 */
export function redactConfig(value: unknown, key = ""): unknown {
  if (typeof value === "string") return secretKey.test(key) ? REDACTED : redactUrl(value);
  if (Array.isArray(value)) return value.map((item) => redactConfig(item, key));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([name, item]) => [
        name,
        secretKey.test(name) && item !== undefined ? REDACTED : redactConfig(item, name),
      ]),
    );
  }
  return value;
}

function exampleCommand(): Command {
  return new Command("example")
    .summary("Print a complete, commented configuration file")
    .description(
      "Print a complete configuration file: every setting with a one-line comment and its default " +
        "(optional ones commented out), and the environment variables that override it. It loads as " +
        "it is; replace the placeholders (auth.jwksUrl, the images) before use.",
    )
    .option("--json", "print an object: the example as YAML text, its settings, the environment variables")
    .addHelpText(
      "after",
      "\nExamples:\n  npx sandpool config example > sandpool.yaml\n  npx sandpool config example --json\n",
    )
    .action(async (options: { json?: boolean }) => {
      const { configExample } = await import("../../config/config-example.js");
      const text = configExample();
      if (!options.json) {
        process.stdout.write(text);
        return;
      }
      const { parse } = await import("yaml");
      const { configEnvVariables } = await import("../../config/config-env.js");
      printJson({ yaml: text, config: parse(text) as unknown, environment: configEnvVariables });
    });
}

function checkCommand(): Command {
  return new Command("check")
    .summary("Check a configuration and print the effective one, secrets redacted")
    .description(
      "Load the configuration as the gateway does (the file, then environment variables over it) " +
        "and print the effective configuration as YAML, defaults filled in and secrets redacted. " +
        `On a problem, print every one with its path and exit with code ${CONFIG_ERROR_EXIT_CODE}.`,
    )
    .option("--config <file>", "YAML configuration file; without one, the environment alone")
    .option("--json", "print an object: ok, the sources, the effective configuration or the problems")
    .addHelpText(
      "after",
      "\nExamples:\n" +
        "  npx sandpool config check --config sandpool.yaml\n" +
        "  npx sandpool config check --config sandpool.yaml --json\n" +
        "  SANDPOOL_PORT=9000 npx sandpool config check --config sandpool.yaml   # env wins over the file\n",
    )
    .action(async (options: { config?: string; json?: boolean }) => {
      const { ConfigError, loadGatewayConfigWithSources } = await import("../../config/load-config.js");
      const { stringify } = await import("yaml");
      try {
        const { config, fromEnvironment } = loadGatewayConfigWithSources({
          file: options.config,
          env: process.env,
        });
        if (options.json) {
          printJson({
            ok: true,
            file: options.config ?? null,
            environment: fromEnvironment,
            config: redactConfig(config),
          });
          return;
        }
        const origin = [
          options.config === undefined ? "no file" : `file ${options.config}`,
          fromEnvironment.length === 0
            ? "no environment variables"
            : `environment ${fromEnvironment.join(", ")}`,
        ];
        process.stdout.write(
          `# effective sandpool configuration (${origin.join("; ")}); secrets redacted\n${stringify(
            redactConfig(config),
            { lineWidth: 0 },
          )}`,
        );
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        process.stderr.write(`${error.message}\n`);
        if (options.json) printJson({ ok: false, file: options.config ?? null, problems: error.problems });
        process.exitCode = CONFIG_ERROR_EXIT_CODE;
      }
    });
}

export function configCommand(): Command {
  return new Command("config")
    .description("Print an example configuration file, or check one and show the effective configuration.")
    .addHelpText(
      "after",
      "\nThe gateway reads a YAML file (--config) and environment variables, which win over the file.\n" +
        "Unknown keys and unknown SANDPOOL_* variables are errors, with a suggestion for a likely typo.\n" +
        "\nExamples:\n" +
        "  npx sandpool config example > sandpool.yaml\n" +
        "  npx sandpool config check --config sandpool.yaml\n",
    )
    .addCommand(exampleCommand())
    .addCommand(checkCommand());
}
