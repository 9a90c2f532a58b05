/**
 * CPU time a process has used, read from outside it (Linux /proc), so a gateway's work per
 * call can be measured as CPU rather than wall time: on a machine loaded by other work the
 * wall time of a call is mostly waiting for a CPU, its CPU time is not.
 *
 * Every thread's scheduler time (`/proc/PID/task/TID/schedstat`, nanoseconds: the main
 * thread, V8's GC and compiler threads, libuv's pool) is summed; where schedstat is missing,
 * the process's utime + stime (`/proc/PID/stat`, clock ticks of 10 ms) stands in.
 *
 * And the whole machine's busy CPU (`/proc/stat`): what a path costs beyond its own process
 * (the client, the sandbox servers, Redis, the kernel), which with every CPU in use is what
 * sets its throughput.
 */
import { readdir, readFile } from "node:fs/promises";

const TICK_MS = 10;

/** The CPU milliseconds `pid` has used so far (all its threads). */
export async function cpuMsOf(pid) {
  try {
    let ns = 0;
    for (const tid of await readdir(`/proc/${pid}/task`)) {
      const schedstat = await readFile(`/proc/${pid}/task/${tid}/schedstat`, "utf8").catch(() => "");
      ns += Number(schedstat.split(" ")[0] ?? 0) || 0;
    }
    if (ns > 0) return ns / 1e6;
  } catch {
    // No task folder: fall back to the process's own counters.
  }
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of stat; after the command they are the 12th and 13th.
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

/** The CPU milliseconds all CPUs of the machine have been busy so far (not idle, not stolen). */
export async function machineBusyMs() {
  const [user, nice, system, , , irq, softirq] = (await readFile("/proc/stat", "utf8"))
    .split("\n")[0]
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (user + nice + system + irq + softirq) * TICK_MS;
}

/**
 * Runs `work` and returns the CPU milliseconds each process of `pids` spent on it, less what
 * it spends when idle (its timers, schedulers, health polls), measured over `idleMs` first
 * at the same rate. `{ [name]: cpuMs }` for `pids` `{ [name]: pid }`, and the work's `wallMs`.
 */
export async function cpuSpentOn(pids, work, { idleMs = 1_000 } = {}) {
  const names = Object.keys(pids);
  const read = async () =>
    Object.fromEntries(await Promise.all(names.map(async (n) => [n, await cpuMsOf(pids[n])])));
  const idleStart = await read();
  const idleStarted = performance.now();
  await new Promise((resolve) => setTimeout(resolve, idleMs));
  const idleEnd = await read();
  const idleWall = performance.now() - idleStarted;
  const before = await read();
  const started = performance.now();
  const value = await work();
  const wallMs = performance.now() - started;
  const after = await read();
  const cpuMs = {};
  for (const n of names) {
    const idleRate = (idleEnd[n] - idleStart[n]) / idleWall;
    cpuMs[n] = Math.max(0, after[n] - before[n] - idleRate * wallMs);
  }
  return { cpuMs, wallMs, value };
}
