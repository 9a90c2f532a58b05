/**
 * Gate for suites that need an external service (a Docker engine, an image, a database).
 *
 *   const available = await requireService("docker", dockerAvailable, { start: "bash scripts/start-docker.sh" });
 *   describe.skipIf(!available)("...", () => { ... });
 *
 * The probe answering true -> true. Otherwise, under CI=true the call throws, so the test
 * file fails to load and the run fails; locally it prints a loud warning to stderr and
 * returns false, and the suite skips itself. Top-level await in a test file is fine (ESM).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface ServiceOptions {
  /** How to start or provide the service, shown in the warning and the CI error. */
  start?: string;
}

/** Why the last ready-made probe said no; reset before every probe that requireService runs. */
let lastProblem: string | undefined;

export async function requireService(
  name: string,
  probe: () => Promise<boolean>,
  options: ServiceOptions = {},
): Promise<boolean> {
  lastProblem = undefined;
  let ok = false;
  try {
    ok = await probe();
  } catch (error) {
    lastProblem = error instanceof Error ? error.message : String(error);
  }
  if (ok) return true;
  const reason = (lastProblem ?? `${name} is not available`).replace(/[.!?\s]+$/, "");
  const start = options.start ?? "the commands in .ci/run";
  if (process.env.CI === "true") {
    throw new Error(`${name} is required when CI=true: ${reason}. Start it with ${start}.`);
  }
  console.warn(`\n*** SKIPPING ${name} tests: ${reason}. Start it with ${start}. ***\n`);
  return false;
}

/** Runs a command; true when it exits 0 within the timeout, else false (and records why). */
async function succeeds(file: string, args: string[], timeoutMs = 5_000): Promise<boolean> {
  try {
    await run(file, args, { timeout: timeoutMs, killSignal: "SIGKILL" });
    return true;
  } catch (error) {
    const e = error as NodeJS.ErrnoException & { stderr?: string; killed?: boolean };
    const command = [file, ...args].join(" ");
    if (e.code === "ENOENT") lastProblem = `\`${file}\` is not installed`;
    else if (e.killed) lastProblem = `\`${command}\` did not answer within ${timeoutMs / 1000} s`;
    else lastProblem = `\`${command}\` failed: ${(e.stderr ?? e.message).trim().split("\n")[0]}`;
    return false;
  }
}

/** A Docker engine answers `docker info` within 5 s. */
export function dockerAvailable(): Promise<boolean> {
  return succeeds("docker", ["info", "--format", "{{.ServerVersion}}"]);
}

/** The image `tag` exists in the local engine (never pulled). */
export function dockerImageAvailable(tag: string): Promise<boolean> {
  return succeeds("docker", ["image", "inspect", "--format", "{{.Id}}", tag]);
}
