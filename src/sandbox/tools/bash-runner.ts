/**
 * Runs one shell command in the session's workspace. The command leads its own process
 * group: on timeout the whole group is terminated, then killed. Jobs it leaves running in
 * the background are not waited for (their output after the command's exit is not
 * captured); they die when the call returns with `reapStrayProcesses` (stray-reaper.ts),
 * else with the session.
 */
import { spawn } from "node:child_process";
import { constants as osConstants } from "node:os";
import type { ExecutionOutcome } from "../../contract/schemas.js";
import { cappedStreams, type OutputListener } from "./capped-output.js";
import { sandboxEnvironment, signalGroup } from "./process-group.js";

export interface BashRunOptions {
  cwd: string;
  home: string;
  timeoutMs: number;
  maxOutputBytes: number;
  killGraceMs: number;
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
    const child = spawn("bash", ["-c", command], {
      cwd: options.cwd,
      env: sandboxEnvironment(options.home),
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
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
      // Background jobs may keep the pipes open: read what is already there, then stop.
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
