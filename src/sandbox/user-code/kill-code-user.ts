/**
 * Ends every process of the code's uid at once: `kill -9 -1` run as that uid. The kernel
 * signals, in one pass under its task-list lock, every process the caller may signal (one
 * whose real or saved uid is the caller's) but the caller itself and PID 1, a process forked
 * meanwhile included. It needs no look at /proc, so nothing user code does to its processes
 * (a zombie leader with live threads, a stop, a trace, a new name, group or session) hides
 * one. The server, its ancestors and the interpreter zygote keep root as their real and saved
 * uid: out of its reach.
 *
 * Only for the scrub, when no session is left: it would end the sessions' interpreters too.
 * Never without a code user of its own (it would end every process of the server's uid).
 */
import { execFile } from "node:child_process";
import type { CodeLauncher } from "./code-user.js";

/** A start that does not answer within this is abandoned: the scrub's own look follows anyway. */
const KILL_TIMEOUT_MS = 5_000;

/**
 * Resolves once the kill ran (or could not: the stray reaper and the scrub's count come
 * after it, and fail closed). Refuses nothing and throws nothing without a code user.
 */
export function killEveryCodeProcess(launcher: CodeLauncher): Promise<void> {
  if (!launcher.confined) return Promise.resolve();
  const command = launcher.command("/bin/kill", ["-9", "-1"]);
  return new Promise((resolve) => {
    execFile(command.file, command.args, { timeout: KILL_TIMEOUT_MS }, () => resolve());
  });
}
