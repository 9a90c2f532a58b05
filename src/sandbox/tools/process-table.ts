/**
 * The processes this server can see, read from /proc: enough of each one's `stat` line
 * (pid, parent, state, kernel flags) to tell strays from the processes that must live.
 */
import { readdirSync, readFileSync } from "node:fs";

export interface ProcessEntry {
  pid: number;
  ppid: number;
  /** One letter: R running, S sleeping, Z zombie, ... (proc(5)). */
  state: string;
  /** The kernel's per-process flags (proc(5) field 9). */
  flags: number;
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
  // rest: state ppid pgrp session tty_nr tpgid flags ...
  const [state, ppid, , , , , flags] = rest;
  if (!Number.isInteger(pid) || state === undefined || ppid === undefined || flags === undefined)
    return undefined;
  return { pid, ppid: Number(ppid), state, flags: Number(flags) };
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
      if (entry) entries.push(entry);
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
