/**
 * Runs one shell command in the session's workspace, as user code (user-code/code-user.ts).
 * The command leads its own process group: on timeout the whole group is terminated, then
 * killed, and once the command exits the group is killed at once, so the background jobs
 * it left (a non-interactive bash keeps them in its group; a fork bomb is one) end with it,
 * in one signal no fork can slip past. Jobs that left the group (setsid) die when the call
 * returns with `reapStrayProcesses` (stray-reaper.ts), else with the session.
 */
import { spawn } from "node:child_process";
import { constants as osConstants } from "node:os";
import type { ExecutionOutcome } from "../../contract/schemas.js";
import type { CodeLauncher } from "../user-code/code-user.js";
import { cappedStreams, type OutputListener } from "./capped-output.js";
import { sandboxEnvironment, signalGroup } from "./process-group.js";

export interface BashRunOptions {
  cwd: string;
  home: string;
  timeoutMs: number;
  maxOutputBytes: number;
  killGraceMs: number;
  /** Starts the command as user code, under its identity and bounds. */
  launcher: CodeLauncher;
  /** Told the group id, so the session can kill leftover background jobs when it ends. */
  onGroupStarted?: (pgid: number) => void;
  /** Hears the output as it is kept (streamed Execute). */
  onOutput?: OutputListener;
}

/** After the command exits, how long to keep reading output that is still in the pipes. */
const DRAIN_MS = 100;

export function runBash(command: string, options: BashRunOptions): Promise<ExecutionOutcome> {
  const { out, err } = cappedStreams(options.maxOutputBytes, options.onOutput);
  return new Promise((resolve) => {
    // No startup file, whatever HOME holds; its environment (process-group.ts) has no BASH_ENV.
    const { file, args } = options.launcher.command("bash", ["--norc", "--noprofile", "-c", command]);
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: sandboxEnvironment(options.home, options.launcher.environment()),
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    options.launcher.started(child.pid);
    if (child.pid !== undefined) options.onGroupStarted?.(child.pid);
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));

    let timedOut = false;
    let killTimer: NodeJS.Timeout | undefined;
    const timeoutTimer = setTimeout(() => {
      timedOut = true;
      signalGroup(child.pid, "SIGTERM");
      killTimer = setTimeout(() => signalGroup(child.pid, "SIGKILL"), options.killGraceMs);
    }, options.timeoutMs);

    let settled = false;
    const finish = (returnCode: number) => {
      if (settled) return;
      settled = true;
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      if (timedOut) err.note(`\nCommand timed out after ${options.timeoutMs / 1000} s.\n`);
      resolve({ stdout: out.text(), stderr: err.text(), return_code: timedOut ? 124 : returnCode });
    };

    child.once("error", (error) => {
      err.push(Buffer.from(`cannot start bash: ${error.message}\n`));
      finish(127);
    });
    child.once("exit", (code, signal) => {
      const returnCode = signal ? 128 + (osConstants.signals[signal] ?? 0) : (code ?? 1);
      // What the command left in its group ends now: kill(-pgid) reaches every member at once.
      signalGroup(child.pid, "SIGKILL");
      // Background jobs that left the group may keep the pipes open: read what is already
      // there, then stop.
      const drained = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish(returnCode);
      }, DRAIN_MS);
      child.once("close", () => {
        clearTimeout(drained);
        finish(returnCode);
      });
    });
  });
}
