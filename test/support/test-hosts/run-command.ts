/**
 * Runs one command of the test hosts' machinery (ip, nsenter, docker) with a bounded time,
 * and turns a failure into an error that names the command and its first line of stderr.
 */
import { execFile } from "node:child_process";

export interface CommandResult {
  stdout: string;
  stderr: string;
}

export interface CommandOptions {
  timeoutMs?: number;
  /** Exit codes other than 0 are an answer, not an error: the result carries the code. */
  allowFailure?: boolean;
  env?: NodeJS.ProcessEnv;
}

export class CommandError extends Error {
  constructor(
    message: string,
    readonly code: number | string | undefined,
    readonly stderr: string,
  ) {
    super(message);
  }
}

export function runCommand(
  file: string,
  args: readonly string[],
  options: CommandOptions = {},
): Promise<CommandResult & { code: number }> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 16 * 1024 * 1024, env: options.env },
      (error, stdout, stderr) => {
        if (!error) return resolve({ stdout, stderr, code: 0 });
        const e = error as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
        const command = [file, ...args].join(" ");
        if (e.code === "ENOENT") {
          return reject(
            new CommandError(`\`${file}\` is not installed (needed for: ${command})`, e.code, ""),
          );
        }
        if (e.killed) {
          return reject(
            new CommandError(`\`${command}\` did not finish within ${timeoutMs / 1000} s`, e.code, stderr),
          );
        }
        if (options.allowFailure && typeof e.code === "number")
          return resolve({ stdout, stderr, code: e.code });
        const why = (stderr || e.message).trim().split("\n")[0];
        reject(new CommandError(`\`${command}\` failed (exit ${e.code}): ${why}`, e.code, stderr));
      },
    );
  });
}

/** `ip` with its arguments; the answer's stdout. */
export async function ip(args: readonly string[], timeoutMs = 10_000): Promise<string> {
  return (await runCommand("ip", args, { timeoutMs })).stdout;
}
