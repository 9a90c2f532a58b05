/**
 * Runs the built `sandpool` CLI (dist/cli/main.js) as a real process, the way people and the
 * process runtime do: one-shot commands with runCli, long-running servers with startCliServer.
 * The e2e suites assume `npm run build` ran first; requireBuiltCli says so when it did not.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const cliPath = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

/** Throws a clear error when the CLI has not been built. */
export function requireBuiltCli(): void {
  if (!existsSync(cliPath)) {
    throw new Error(`${cliPath} is missing: run \`npm run build\` before the e2e tests`);
  }
}

/**
 * The real interpreter behind `command` (Python's sys.executable). Version-manager shims on
 * PATH cost half a second per start, so servers under test get this path via --python.
 */
export function resolvePython(command = "python3"): string {
  const executable = execFileSync(command, ["-c", "import sys;print(sys.executable)"], {
    encoding: "utf8",
    timeout: 15_000,
  }).trim();
  if (!executable) throw new Error(`${command} did not report sys.executable`);
  return executable;
}

export interface CliResult {
  /** Exit code; null when the process was ended by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** Kill the process (SIGKILL) and reject after this long. Default 15 s. */
  timeoutMs?: number;
  cwd?: string;
  /** Added to (and overriding) the test process's environment. */
  env?: NodeJS.ProcessEnv;
  /** Written to the command's stdin, which is then closed (default: no stdin). */
  stdin?: string;
}

function spawnCli(args: string[], opts: CliOptions): ChildProcess {
  requireBuiltCli();
  return spawn(process.execPath, [cliPath, ...args], {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: [opts.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
}

/** `sandpool <args>` to completion: its exit code and everything it printed. */
export function runCli(args: string[], opts: CliOptions = {}): Promise<CliResult> {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const child = spawnCli(args, opts);
  if (opts.stdin !== undefined) child.stdin?.end(opts.stdin);
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(
          `sandpool ${args.join(" ")} did not finish within ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`,
        ),
      );
    }, timeoutMs);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    // "close" rather than "exit": the output streams are complete by then.
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export interface CliServer {
  /** The URL from the ready line (the pattern's first capture group). */
  url: string;
  process: ChildProcess;
  /** Everything the server printed so far. */
  output(): { stdout: string; stderr: string };
  /**
   * Sends SIGTERM and resolves with the exit code (null if ended by a signal). Rejects when
   * the process has not exited within `timeoutMs` (default 10 s), after killing it. Safe to
   * call more than once.
   */
  stop(timeoutMs?: number): Promise<number | null>;
}

const LISTENING = /listening on (https?:\/\/\S+)/;

/**
 * Starts `sandpool <args>` and waits until a stdout line matches `readyPattern`; the URL is its
 * first capture group (or the whole match). Rejects, killing the process, when it exits first
 * or is not ready within `timeoutMs`; the error quotes its stderr.
 */
export async function startCliServer(
  args: string[],
  readyPattern: RegExp = LISTENING,
  opts: CliOptions = {},
): Promise<CliServer> {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const child = spawnCli(args, opts);
  let stdout = "";
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  const describe = () => `sandpool ${args.join(" ")}`;

  const url = await new Promise<string>((resolve, reject) => {
    let pending = "";
    let settled = false;
    const fail = (message: string) => {
      cleanup();
      child.kill("SIGKILL");
      reject(new Error(`${describe()}: ${message}\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    };
    const onData = (chunk: string) => {
      stdout += chunk; // kept after ready too, and drained so the child never blocks on a full pipe
      if (settled) return;
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        const match = readyPattern.exec(line);
        if (match) {
          cleanup();
          resolve(match[1] ?? match[0]);
          return;
        }
      }
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      fail(`exited (code ${code}, signal ${signal}) before printing a line matching ${readyPattern}`);
    const onError = (error: Error) => fail(`could not start: ${error.message}`);
    const timer = setTimeout(
      () => fail(`no line matching ${readyPattern} within ${timeoutMs} ms`),
      timeoutMs,
    );
    const cleanup = () => {
      settled = true;
      clearTimeout(timer);
      child.off("exit", onExit);
      child.off("error", onError);
    };
    child.stdout?.setEncoding("utf8").on("data", onData);
    child.once("exit", onExit);
    child.once("error", onError);
  });

  let stopping: Promise<number | null> | undefined;
  const stop = (stopTimeoutMs = 10_000): Promise<number | null> => {
    stopping ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<"late">((resolve) => {
        timer = setTimeout(() => resolve("late"), stopTimeoutMs);
      });
      const result = await Promise.race([exited, late]);
      clearTimeout(timer);
      if (result === "late") {
        child.kill("SIGKILL");
        await exited;
        throw new Error(
          `${describe()} did not exit within ${stopTimeoutMs} ms of SIGTERM (killed)\nstderr:\n${stderr}`,
        );
      }
      return result.code;
    })();
    return stopping;
  };

  return { url, process: child, output: () => ({ stdout, stderr }), stop };
}
