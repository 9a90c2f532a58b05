/**
 * Makes a sandbox whose sessions have all ended as clean as a fresh one, so the gateway can
 * give it to its workspace's next session instead of starting a container (session churn is
 * bounded by container starts otherwise). Nothing of an earlier session may reach the next:
 * - processes: every process but this server and its ancestors is killed, background and
 *   daemonised ones included, in every state (stopped, traced, a zombie leader whose threads
 *   run on), and no thread of any may be left (kill-code-user.ts, then the stray reaper with
 *   no interpreter spared; docs/security-model.md says why both);
 * - System V IPC objects (shared memory, queues, semaphores) outlive their processes in the
 *   container's IPC namespace: removed as their owner, and none may be left;
 * - files: the sessions' root and every directory user code can write to (the tmpfs mounts
 *   of a read-only root: /tmp, /dev/shm, /dev/mqueue) are emptied, and must be empty.
 * - the server itself: user code cannot signal or trace it, but may renice, re-pin or
 *   re-schedule it (server-scheduling.ts), and what it starts inherits that: any change
 *   fails the scrub.
 * Interpreter state and environment go with the processes: each session starts its own
 * interpreter (forked from the zygote, which checks itself alike, or started from the
 * server's environment). Any check that fails throws: the gateway then destroys the sandbox
 * rather than reuse it.
 *
 * Its looks are synchronous (the process table, the IPC tables, the emptied directories):
 * no session is left to serve meanwhile, and each is a few system calls on memory (procfs,
 * tmpfs), where an asynchronous one is a trip through libuv's thread pool that, on a loaded
 * host, waits for a thread and a CPU each time. The next session of the workspace waits for
 * the scrub to end.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import type { StrayReaper } from "../tools/stray-reaper.js";
import type { CodeLauncher } from "../user-code/code-user.js";
import { killEveryCodeProcess } from "../user-code/kill-code-user.js";
import { removeTree } from "./remove-tree.js";
import { changedScheduling, type Scheduling } from "./server-scheduling.js";

const run = promisify(execFile);
const SYSV_IPC_TABLES = ["shm", "msg", "sem"];

export interface ScrubTarget {
  strays: StrayReaper;
  launcher: CodeLauncher;
  /** Directories to empty (not remove: they may be mount points); missing ones are skipped. */
  dirs: readonly string[];
  /** Where the IPC tables are read (`<procRoot>/sysvipc/*`); a test's stand-in, else /proc. */
  procRoot?: string;
  /** The server's nice value, policy and CPUs at start, when they could be read. */
  scheduling?: Scheduling | undefined;
  /** Ends every process of the code's uid at once; kill-code-user.ts unless a test's stand-in. */
  killCodeProcesses?: () => Promise<void>;
}

export class ScrubFailedError extends Error {}

/** How long killed processes may take to leave the process table (a loaded host is slow to). */
const PROCESSES_GONE_WITHIN_MS = 3_000;
/** Looks again after 1, 2, 4 ... ms, then every LOOK_AGAIN_MAX_MS: a killed process usually goes at once. */
const LOOK_AGAIN_MAX_MS = 20;

export async function scrubSandbox(target: ScrubTarget): Promise<void> {
  if (target.scheduling) {
    const changed = changedScheduling(target.scheduling);
    if (changed) throw new ScrubFailedError(changed);
  }
  await killEveryProcess(
    target.strays,
    target.killCodeProcesses ?? (() => killEveryCodeProcess(target.launcher)),
  );
  await removeIpcObjects(target.launcher, target.procRoot ?? "/proc");
  for (const dir of target.dirs) await emptyDirectory(dir);
}

/**
 * Kills every process but the server and its ancestors, then waits until no thread of any is
 * left: one killed a moment ago may still be listed, not yet a zombie, while the kernel tears
 * it down. When anything but the known processes is listed, the kernel first ends every
 * process of the code's uid at once (kill(-1) as that uid); each look then reaps again (the
 * reaper's own freeze and kills, by pid: what the uid's kill missed, or one started
 * meanwhile) and counts threads, so anything left fails the scrub.
 */
async function killEveryProcess(strays: StrayReaper, killCodeProcesses: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + PROCESSES_GONE_WITHIN_MS;
  // A zombie its parent has not reaped yet (a session's interpreter, just ended) is listed
  // too: the process start of the uid-wide kill is paid only when a thread may still run.
  if (!strays.onlyKnownProcesses() && strays.count() > 0) await killCodeProcesses();
  for (let look = 0; ; look++) {
    strays.reap();
    const left = strays.count();
    if (left === 0) return;
    if (Date.now() >= deadline) throw new ScrubFailedError(`${left} threads outlived the scrub`);
    await new Promise((resolve) => setTimeout(resolve, Math.min(LOOK_AGAIN_MAX_MS, 2 ** look)));
  }
}

/**
 * Runs `ipcrm --all` as the code's user (the owner of what user code made), then checks. Only
 * in the container's own IPC namespace, as the code's user: the registry refuses a recycle
 * without both (on a host, as root, it would remove every program's shared memory).
 */
async function removeIpcObjects(launcher: CodeLauncher, procRoot: string): Promise<void> {
  const tables = SYSV_IPC_TABLES.map((table) => path.join(procRoot, "sysvipc", table));
  const remaining = () => tables.map(countIpcObjects).reduce((a, b) => a + b);
  if (remaining() === 0) return;
  // Never as the server's own user: outside a sandbox that could be any program's memory.
  if (!launcher.confined)
    throw new ScrubFailedError("IPC objects exist and user code has no user of its own");
  const command = launcher.command("ipcrm", ["--all"]);
  await run(command.file, command.args, { timeout: 5_000 }).catch(() => undefined);
  const left = remaining();
  if (left > 0) throw new ScrubFailedError(`${left} System V IPC objects outlived the scrub`);
}

function countIpcObjects(table: string): number {
  let text = "";
  try {
    text = readFileSync(table, "utf8");
  } catch {
    // A kernel without System V IPC has no table: nothing to count.
  }
  // The first line is the header.
  return Math.max(0, text.split("\n").filter((line) => line.trim().length > 0).length - 1);
}

/** Usually already empty (a session's end deleted its directory): then one look, no removal. */
async function emptyDirectory(dir: string): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  for (const name of names) await removeTree(path.join(dir, name));
  const left = names.length === 0 ? names : readdirSync(dir);
  if (left.length > 0)
    throw new ScrubFailedError(`${dir} still holds ${left.length} entries after the scrub`);
}
