/**
 * What user code may change in the sandbox server although it cannot signal or trace it: the
 * kernel lets a process renice, re-pin (CPU affinity) or re-schedule (policy) another whose
 * effective uid is its own, and the server's effective uid is the code's (user-code/code-user.ts).
 * Programs the server starts inherit all three, so a session could slow down the next one's
 * tools. The server reads its threads' values at start; a scrub checks them and fails (the
 * sandbox is destroyed) when one changed: a process can raise its own nice value, never lower it.
 */
import { readdirSync, readFileSync } from "node:fs";

export interface Scheduling {
  nice: string | undefined;
  policy: string | undefined;
  cpus: string | undefined;
}

/** One thread's values, from /proc/<...>/task/<tid>/{stat,status}; undefined where unreadable. */
function schedulingOf(taskDir: string): Scheduling | undefined {
  let stat: string;
  try {
    stat = readFileSync(`${taskDir}/stat`, "utf8");
  } catch {
    return undefined; // the thread ended meanwhile
  }
  // Fields after the command (in parentheses): state is field 3, nice 19, policy 41 (proc(5)).
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  let cpus: string | undefined;
  try {
    cpus = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`${taskDir}/status`, "utf8"))?.[1];
  } catch {
    cpus = undefined;
  }
  return { nice: rest[16], policy: rest[38], cpus };
}

/** The server's main thread's values now: the baseline its threads keep. */
export function serverScheduling(procSelf = "/proc/self"): Scheduling | undefined {
  return schedulingOf(
    `${procSelf}/task/${readdirSync(`${procSelf}/task`).sort((a, b) => Number(a) - Number(b))[0]}`,
  );
}

/** The first of the server's threads whose values differ from `baseline`, described; undefined when none does. */
export function changedScheduling(baseline: Scheduling, procSelf = "/proc/self"): string | undefined {
  for (const tid of readdirSync(`${procSelf}/task`)) {
    const now = schedulingOf(`${procSelf}/task/${tid}`);
    if (!now) continue;
    for (const key of ["nice", "policy", "cpus"] as const) {
      if (now[key] !== baseline[key]) {
        return `the server's thread ${tid} has ${key} ${now[key]}, not ${baseline[key]}`;
      }
    }
  }
  return undefined;
}
