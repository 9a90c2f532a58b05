/** Resident memory of processes, as `ps -o rss` reports it (Linux /proc). */
import { readdir, readFile } from "node:fs/promises";

/** RSS of `pid` in MB; NaN when the process is gone. */
export async function rssMb(pid) {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024;
  } catch {
    return Number.NaN;
  }
}

/** The children of `pid` whose command line contains `needle`. */
export async function childrenMatching(pid, needle) {
  const found = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== pid) continue;
      const cmdline = (await readFile(`/proc/${entry}/cmdline`, "utf8")).replaceAll("\0", " ");
      if (cmdline.includes(needle)) found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}
