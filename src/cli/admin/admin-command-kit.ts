/**
 * What every admin command shares: --url/--token/--json, the exit codes (0 done, 1 refused or
 * unreachable, 2 bad usage), a one-line reason on stderr, and argument parsers.
 */
import { type Command, type CommanderError, InvalidArgumentError, Option } from "commander";
import { workspaceIdPattern } from "../../auth/workspace-claim.js";
import { parseIsoInstant } from "../../contract/iso-instant.js";
import { ADMIN_USAGE_EXIT_CODE, AdminCliError, AdminUsageError, DEFAULT_ADMIN_URL } from "./admin-client.js";

/**
 * Runs an action: usage problems exit 2, refusals and unreachable gateways exit 1, each with its
 * reason on stderr prefixed by `prefix` (e.g. "sandpool policy").
 */
export function runAdmin<A extends unknown[]>(
  prefix: string,
  action: (...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  return async (...args) => {
    try {
      await action(...args);
    } catch (error) {
      if (error instanceof AdminUsageError || error instanceof InvalidArgumentError) {
        process.stderr.write(`${prefix}: ${error.message}\n(add --help for usage and examples)\n`);
        process.exitCode = ADMIN_USAGE_EXIT_CODE;
        return;
      }
      if (error instanceof AdminCliError) {
        process.stderr.write(`${prefix}: ${error.message}\n`);
        process.exitCode = 1;
        return;
      }
      throw error;
    }
  };
}

/** Commander's own usage errors (unknown option, missing argument) exit 2, help exits 0. */
export function usageExits(command: Command): Command {
  return command
    .showHelpAfterError("(add --help for usage and examples)")
    .exitOverride((error: CommanderError) => {
      process.exit(error.exitCode === 0 ? 0 : ADMIN_USAGE_EXIT_CODE);
    });
}

/** The "Examples:" block after a command's help. */
export function examples(...lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  ${line}\n`).join("")}`;
}

/** --url, --token and --json, on every admin sub-command. */
export function withConnection(command: Command): Command {
  return usageExits(
    command
      .addOption(
        new Option("--url <url>", "the gateway's URL (the admin API is at <url>/admin/v1)")
          .env("SANDPOOL_URL")
          .default(DEFAULT_ADMIN_URL),
      )
      .addOption(new Option("--token <token>", "an admin token").env("SANDPOOL_ADMIN_TOKEN"))
      .option("--json", "print the admin API's JSON answer as it is"),
  );
}

export function workspaceArgument(value: string): string {
  if (!workspaceIdPattern.test(value)) {
    throw new InvalidArgumentError(
      `'${value}' is not a valid workspace id (letters, digits, . _ : -; 128 at most, starting with a letter or digit)`,
    );
  }
  return value;
}

export function listOption(value: string): string[] {
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

const DURATION = /^(\d+)\s*(s|m|h|d|w)$/i;
const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** A duration (30s, 30m, 24h, 7d, 2w) in milliseconds, or undefined when `value` is not one. */
export function durationMs(value: string): number | undefined {
  const duration = DURATION.exec(value.trim());
  return duration ? Number(duration[1]) * UNIT_MS[duration[2]!.toLowerCase()]! : undefined;
}

/**
 * `--since 24h` (s, m, h, d, w ago), a date (a UTC day) or a date-time with a zone: an
 * instant, as an ISO string. The same rule as the admin API (src/contract/iso-instant.ts).
 */
export function sinceOption(value: string): string {
  const ms = durationMs(value);
  if (ms !== undefined) return new Date(Date.now() - ms).toISOString();
  return instantOption(value, "a duration (30m, 24h, 7d), ");
}

/** `--since`: a duration ago, a date (UTC) or a date-time with a zone (sinceOption). */
export function sinceFlag(): Option {
  return new Option(
    "--since <when>",
    "start: a duration ago (30m, 24h, 7d), a date (UTC) or a date-time with Z or an offset (default 24h)",
  ).argParser(sinceOption);
}

/** `--until`: a date (UTC) or a date-time with a zone (instantOption). */
export function untilFlag(): Option {
  return new Option(
    "--until <when>",
    "end: a date (UTC) or a date-time with Z or an offset (default now)",
  ).argParser((value: string) => instantOption(value));
}

/** A date (a UTC day) or a date-time with Z or an offset, as an ISO string; else exit 2. */
export function instantOption(value: string, alternatives = ""): string {
  const parsed = parseIsoInstant(value);
  if (parsed.ok) return parsed.date.toISOString();
  if (/^\d{4}-/.test(value)) throw new InvalidArgumentError(parsed.reason);
  throw new InvalidArgumentError(
    `expected ${alternatives}a date (YYYY-MM-DD, UTC) or a date-time with Z or an offset, got '${value}'`,
  );
}
