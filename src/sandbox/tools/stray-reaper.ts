/**
 * Ends the processes tool calls leave behind (`setsid nohup ... &`, a daemonised child,
 * `Popen(..., start_new_session=True)`, a fork bomb that left its group), so nothing runs
 * while no call is being charged and nothing holds the processes the next call needs.
 *
 * Only safe where this server owns its whole PID namespace (a container): there every
 * process it sees is its own, a session's, or one of its ancestors (PID 1, tini). It is
 * therefore refused at start-up when kernel threads are visible (the host's namespace).
 *
 * It runs while no tool runs in any session (before a tool starts and after it returns), and
 * kills every process except this server, its ancestors and the sessions' persistent Python
 * interpreters, whose state must survive between calls. A fork bomb replaces what is killed
 * as fast as one can look, so a reap first freezes: kill(-1, SIGSTOP) stops, in one signal
 * no fork slips past, every process this server may signal but itself and PID 1; then what
 * is not spared is killed (a stopped process dies on SIGKILL), and the spared are continued.
 * It looks again until a pass finds nothing new to kill. Everything here is synchronous, so
 * no call can start between the look at /proc and the kills.
 *
 * What counts as alive is a thread group with any task that may run (process-table.ts): a
 * leader that left with SYS_exit is a zombie whose threads run on, and a SIGKILL to its pid
 * ends the whole group. Nothing here looks at names, process groups or sessions, so a
 * process that renamed itself or left its group or session is picked like any other; a
 * stopped (T) or traced (t) one dies on SIGKILL too, and one forked during kill(-1) gets the
 * signal from the kernel.
 */
import type { Logger } from "pino";
import {
  ancestorsOf,
  inOwnPidNamespace,
  isAlive,
  listPids,
  type ProcessEntry,
  readProcessTable,
  runningThreads,
} from "./process-table.js";

export interface StrayReaperSource {
  /** The processes that must survive: the sessions' persistent interpreters, the interpreter zygote. */
  protectedPids(): Iterable<number>;
  /**
   * Processes whose children survive too: the zygote's, an interpreter being forked for a
   * session, whose pid the server learns only after the fork.
   */
  protectedParents?(): Iterable<number>;
}

/**
 * The processes to kill: all but `self`, its ancestors, the protected ones (and children of
 * protected parents) and the dead, where a zombie leader with a live thread is not dead.
 */
export function pickStrays(
  table: ProcessEntry[],
  self: number,
  keep: Iterable<number>,
  keepChildrenOf: Iterable<number> = [],
): number[] {
  const spared = sparedPids(table, self, keep, keepChildrenOf);
  return table.filter((entry) => !spared.has(entry.pid) && isAlive(entry)).map((entry) => entry.pid);
}

function sparedPids(
  table: ProcessEntry[],
  self: number,
  keep: Iterable<number>,
  keepChildrenOf: Iterable<number> = [],
): Set<number> {
  const spared = ancestorsOf(self, table);
  for (const pid of keep) spared.add(pid);
  const parents = new Set(keepChildrenOf);
  if (parents.size > 0) {
    for (const entry of table) if (parents.has(entry.ppid)) spared.add(entry.pid);
  }
  return spared;
}

/** Passes after the freeze; each kills only what the ones before had not (a safety net). */
const MAX_PASSES = 5;

/** How the reaper signals: the real process.kill, or a test's stand-in. */
export type Signaller = (pid: number, signal: NodeJS.Signals) => void;

export class StrayReaper {
  constructor(
    private readonly source: StrayReaperSource,
    private readonly log: Logger,
    private readonly procRoot = "/proc",
    private readonly signal: Signaller = (pid, signal) => process.kill(pid, signal),
  ) {}

  /** Throws unless this server owns its PID namespace (see the file's comment). */
  assertSafe(): void {
    if (!inOwnPidNamespace(readProcessTable(this.procRoot))) {
      throw new Error(
        "reapStrayProcesses (--reap-strays) needs a PID namespace of the sandbox server's own, such as a container's: " +
          "this server sees kernel threads, so it shares the host's and would kill processes that are not its sessions'",
      );
    }
  }

  /**
   * How many threads of strays may still run now (a scrub checks its kills left none): every
   * task of every stray, so a zombie leader's live threads count, one each.
   */
  count(): number {
    const keep = [...this.source.protectedPids()];
    // Nothing but known pids listed: no stray, so no thread of one (see onlyKnownProcesses).
    if (this.onlyKnownProcesses(keep)) return 0;
    const table = readProcessTable(this.procRoot);
    const strays = new Set(pickStrays(table, process.pid, keep, this.parents()));
    return table
      .filter((entry) => strays.has(entry.pid))
      .reduce((sum, entry) => sum + runningThreads(entry), 0);
  }

  /** Kills every stray (see the file's comment); call only while no tool runs. Returns how many it killed. */
  reap(): number {
    const keep = [...this.source.protectedPids()];
    if (this.onlyKnownProcesses(keep)) return 0;
    const parents = this.parents();
    const table = readProcessTable(this.procRoot);
    if (pickStrays(table, process.pid, keep, parents).length === 0) return 0;
    const killed = new Set<number>();
    this.send(-1, "SIGSTOP");
    try {
      for (let pass = 0; pass < MAX_PASSES; pass++) {
        const fresh = pickStrays(readProcessTable(this.procRoot), process.pid, keep, parents).filter(
          (pid) => !killed.has(pid),
        );
        if (fresh.length === 0) break;
        // A stray found after the first pass escaped the freeze (the kernel gives a process
        // forked during kill(-1) the signal too, so this is a safety net): freeze again.
        if (pass > 0) this.send(-1, "SIGSTOP");
        for (const pid of fresh) {
          if (this.send(pid, "SIGKILL")) killed.add(pid);
        }
      }
    } finally {
      // The spared were frozen with the rest: the interpreters, and ancestors below PID 1.
      for (const pid of sparedPids(readProcessTable(this.procRoot), process.pid, keep, parents)) {
        if (pid !== process.pid) this.send(pid, "SIGCONT");
      }
    }
    if (killed.size > 0) this.log.info({ killed: killed.size }, "ended processes left behind by tool calls");
    return killed.size;
  }

  private parents(): number[] {
    return [...(this.source.protectedParents?.() ?? [])];
  }

  /** This server's ancestors (PID 1, tini), read once: they change only if its parent dies. */
  private ancestors: { ppid: number; pids: Set<number> } | undefined;

  /**
   * Between calls there is usually nothing to reap: when every process /proc lists is this
   * server, an ancestor of it or a protected interpreter, no `stat` is read. Each read is a
   * few system calls, which gVisor traps: two full looks cost an Execute about 4 ms there.
   * /proc lists every thread group by its leader's pid, a zombie leader whose threads run on
   * included (the kernel keeps the leader until its last thread leaves), so a group of user
   * code is never hidden behind a known pid: any unknown pid means a look at its threads.
   */
  onlyKnownProcesses(keep: readonly number[] = [...this.source.protectedPids()]): boolean {
    if (this.ancestors?.ppid !== process.ppid) {
      this.ancestors = {
        ppid: process.ppid,
        pids: ancestorsOf(process.pid, readProcessTable(this.procRoot)),
      };
    }
    const known = new Set([...this.ancestors.pids, ...keep]);
    return listPids(this.procRoot).every((pid) => known.has(pid));
  }

  /** True when the signal was sent; a process gone meanwhile (ESRCH) or not ours (EPERM) is not an error. */
  private send(pid: number, signal: NodeJS.Signals): boolean {
    try {
      this.signal(pid, signal);
      return true;
    } catch {
      return false;
    }
  }
}
