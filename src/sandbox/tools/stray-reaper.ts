/**
 * Ends the processes a tool call leaves behind (`setsid nohup ... &`, a daemonised child,
 * `Popen(..., start_new_session=True)`), so nothing runs while no call is being charged.
 *
 * Only safe where this server owns its whole PID namespace (a container): there every
 * process it sees is its own, a session's, or one of its ancestors (PID 1, tini). It is
 * therefore refused at start-up when kernel threads are visible (the host's namespace).
 *
 * Once no call is in flight in any session, every process is killed (SIGKILL) except this
 * server, its ancestors and the sessions' persistent Python interpreters, whose state must
 * survive between calls. Waiting for "no call in flight" keeps a running call's own
 * processes alive; while any call runs, its wall time is being charged anyway. Everything
 * here is synchronous, so no call can start between the look at /proc and the kills.
 */
import type { Logger } from "pino";
import { ancestorsOf, inOwnPidNamespace, type ProcessEntry, readProcessTable } from "./process-table.js";

export interface StrayReaperSource {
  /** Calls queued or running, across every session. */
  callsInFlight(): number;
  /** The processes that must survive: the sessions' persistent interpreters. */
  protectedPids(): Iterable<number>;
}

/** The processes to kill: all but `self`, its ancestors, the protected ones and the dead. */
export function pickStrays(table: ProcessEntry[], self: number, keep: Iterable<number>): number[] {
  const spared = ancestorsOf(self, table);
  for (const pid of keep) spared.add(pid);
  return table.filter((entry) => !spared.has(entry.pid) && entry.state !== "Z").map((entry) => entry.pid);
}

export class StrayReaper {
  constructor(
    private readonly source: StrayReaperSource,
    private readonly log: Logger,
    private readonly procRoot = "/proc",
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

  /** Called after every tool call: reaps once no call is left in flight. Returns how many it killed. */
  afterCall(): number {
    if (this.source.callsInFlight() > 0) return 0;
    const strays = pickStrays(readProcessTable(this.procRoot), process.pid, this.source.protectedPids());
    let killed = 0;
    for (const pid of strays) {
      try {
        process.kill(pid, "SIGKILL");
        killed++;
      } catch {
        // ESRCH: it ended on its own meanwhile.
      }
    }
    if (killed > 0) this.log.info({ killed }, "ended processes left behind by tool calls");
    return killed;
  }
}
