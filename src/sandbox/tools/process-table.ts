/**
 * The processes this server can see, read from /proc: enough of each one's `stat` line
 * (pid, parent, state, kernel flags) to tell strays from the processes that must live.
 *
 * A process is its thread group, and /proc lists only the group's leader: a leader that
 * left with SYS_exit shows as a zombie (Z) while its other threads run on. So a process is
 * dead only when no thread of it may run; the leader's state alone says nothing about the
 * rest. Two looks, either enough to count it alive: the group's thread count (`stat` field
 * 20, which counts a zombie leader and every thread not yet gone: 1 once the rest left), and
 * the tasks under `/proc/<pid>/task` that are not Z or X. gVisor has no `task/` for a zombie
 * leader (its live thread is reachable only as `/proc/<tid>`, which it does not list, and
 * `ps` shows nothing of the group), but its thread count is right.
 */
import { readdirSync, readFileSync } from "node:fs";

export interface ProcessEntry {
  pid: number;
  ppid: number;
  /** One letter: R running, S sleeping, Z zombie, ... (proc(5)). */
  state: string;
  /** The kernel's per-process flags (proc(5) field 9). */
  flags: number;
  /** The group's threads, a zombie leader included (proc(5) field 20), when the line has it. */
  threads?: number;
  /**
   * For a leader that is a zombie or dead: how many of its threads still run (read from
   * `task/`). Unset for a live leader, whose process is alive whatever its threads do.
   */
  liveThreads?: number;
}

const DEAD_STATES = new Set(["Z", "X", "x"]);

/** True when the state letter is a task that will never run again (zombie or dead). */
export function isDeadState(state: string): boolean {
  return DEAD_STATES.has(state);
}

/** True while any task of the process may still run: its leader, or a thread of a zombie leader. */
export function isAlive(entry: ProcessEntry): boolean {
  return !isDeadState(entry.state) || (entry.liveThreads ?? 0) > 0;
}

/** The threads of the process that may still run: all of a live leader's, a dead leader's live ones. */
export function runningThreads(entry: ProcessEntry): number {
  if (isDeadState(entry.state)) return entry.liveThreads ?? 0;
  return Math.max(1, entry.threads ?? 1);
}

/**
 * The tasks (threads) of `pid` that may still run: those whose `task/<tid>/stat` is not Z or
 * X. A task gone between the listing and the read does not run; a process gone altogether has none.
 */
export function liveTaskCount(pid: number, procRoot = "/proc"): number {
  let tids: string[];
  try {
    tids = readdirSync(`${procRoot}/${pid}/task`);
  } catch {
    return 0;
  }
  let live = 0;
  for (const tid of tids) {
    try {
      const task = parseStat(readFileSync(`${procRoot}/${pid}/task/${tid}/stat`, "utf8"));
      if (task && !isDeadState(task.state)) live++;
    } catch {
      // Gone between the listing and the read.
    }
  }
  return live;
}

/** PF_KTHREAD: the process is a kernel thread. */
const KERNEL_THREAD_FLAG = 0x00200000;

/**
 * Parses one `/proc/<pid>/stat` line. The command name (field 2) is in parentheses and
 * may itself hold spaces and parentheses, so the fields after it are found from the last ')'.
 */
export function parseStat(line: string): ProcessEntry | undefined {
  const open = line.indexOf("(");
  const close = line.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const pid = Number(line.slice(0, open).trim());
  const rest = line.slice(close + 2).split(" ");
  // rest: state ppid pgrp session tty_nr tpgid flags ... num_threads (the 18th)
  const [state, ppid, , , , , flags] = rest;
  if (!Number.isInteger(pid) || state === undefined || ppid === undefined || flags === undefined)
    return undefined;
  const entry: ProcessEntry = { pid, ppid: Number(ppid), state, flags: Number(flags) };
  const threads = Number(rest[17]);
  if (rest[17] !== undefined && Number.isInteger(threads)) entry.threads = threads;
  return entry;
}

/** The pids `procRoot` lists (one readdir, no file read). */
export function listPids(procRoot = "/proc"): number[] {
  return readdirSync(procRoot)
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

/** Every process visible in `procRoot`; one that exits while being read is simply left out. */
export function readProcessTable(procRoot = "/proc"): ProcessEntry[] {
  const entries: ProcessEntry[] = [];
  for (const name of readdirSync(procRoot)) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const entry = parseStat(readFileSync(`${procRoot}/${name}/stat`, "utf8"));
      if (!entry) continue;
      // Only a dead leader costs a look at its threads: the usual table stays one read a process.
      if (isDeadState(entry.state))
        entry.liveThreads = Math.max(liveTaskCount(entry.pid, procRoot), (entry.threads ?? 1) - 1);
      entries.push(entry);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return entries;
}

/**
 * True when no kernel thread is visible: kernel threads show only in the host's (initial)
 * PID namespace, so this server then sees a namespace of its own, such as a container's,
 * where every process it can see belongs to its sessions or to itself.
 */
export function inOwnPidNamespace(table: ProcessEntry[]): boolean {
  return !table.some((entry) => (entry.flags & KERNEL_THREAD_FLAG) !== 0);
}

/** `pid` and every process above it, up to the namespace's root. */
export function ancestorsOf(pid: number, table: ProcessEntry[]): Set<number> {
  const parent = new Map(table.map((entry) => [entry.pid, entry.ppid]));
  const chain = new Set<number>();
  let current: number | undefined = pid;
  while (current !== undefined && current > 0 && !chain.has(current)) {
    chain.add(current);
    current = parent.get(current);
  }
  return chain;
}
