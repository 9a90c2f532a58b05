/**
 * A container's usage read straight from its cgroup files, when this process sees the
 * engine host's cgroup tree (a gateway or node running on the engine's host): microseconds
 * a reading, where Docker's stats API takes up to a second (it samples twice). The CPU meter
 * reads every leased sandbox every few seconds, so this is what makes that cheap.
 *
 * Both cgroup versions and both of Docker's cgroup drivers are looked for; a container
 * found under none of them (a remote engine, a gateway in a container of its own, a custom
 * cgroup parent) is read through the stats API instead (container-usage.ts).
 */
import { readFileSync, writeFileSync } from "node:fs";
import type { SandboxUsage } from "../sandbox-runtime.js";

interface CgroupLayout {
  /** The files of one container, or undefined when this layout does not hold it. */
  cpuNs(root: string, id: string): Promise<number | undefined>;
  memory(root: string, id: string): Promise<{ current?: number; peak?: number }>;
  /** Starts the container's memory peak anew from what it holds now; false where the kernel cannot. */
  resetPeak(root: string, id: string): boolean;
}

const v1 = (parent: (id: string) => string): CgroupLayout => ({
  async cpuNs(root, id) {
    const text = await readOptional(`${root}/cpuacct/${parent(id)}/cpuacct.usage`);
    return text === undefined ? undefined : Number(text);
  },
  async memory(root, id) {
    const dir = `${root}/memory/${parent(id)}`;
    const [current, peak] = await Promise.all([
      readOptional(`${dir}/memory.usage_in_bytes`),
      readOptional(`${dir}/memory.max_usage_in_bytes`),
    ]);
    return { current: bytes(current), peak: bytes(peak) };
  },
  resetPeak(root, id) {
    // cgroup v1 takes a 0 as "the peak is what the cgroup holds now", for every later reader.
    return writeOptional(`${root}/memory/${parent(id)}/memory.max_usage_in_bytes`, "0");
  },
});

const v2 = (parent: (id: string) => string): CgroupLayout => ({
  async cpuNs(root, id) {
    const text = await readOptional(`${root}/${parent(id)}/cpu.stat`);
    const usec = text === undefined ? undefined : /^usage_usec (\d+)$/m.exec(text)?.[1];
    return usec === undefined ? undefined : Number(usec) * 1000;
  },
  async memory(root, id) {
    const dir = `${root}/${parent(id)}`;
    const [current, peak] = await Promise.all([
      readOptional(`${dir}/memory.current`),
      readOptional(`${dir}/memory.peak`),
    ]);
    return { current: bytes(current), peak: bytes(peak) };
  },
  // cgroup v2's memory.peak takes a write (Linux 6.12 and later) only as a reset for reads
  // through the same open file: a later reading opens it anew and sees the cgroup's whole
  // life. There is no reset every reader sees.
  resetPeak: () => false,
});

const cgroupfsParent = (id: string) => `docker/${id}`;
const systemdParent = (id: string) => `system.slice/docker-${id}.scope`;
const LAYOUTS: CgroupLayout[] = [
  v1(cgroupfsParent),
  v1(systemdParent),
  v2(cgroupfsParent),
  v2(systemdParent),
];

export class CgroupUsageReader {
  /** The layout that held the last container found: every container of one host has the same. */
  private layout: CgroupLayout | undefined;

  constructor(private readonly root = "/sys/fs/cgroup") {}

  /** The container's usage, or undefined when its cgroup is not visible from here. */
  async read(containerId: string): Promise<SandboxUsage | undefined> {
    if (!/^[0-9a-f]{64}$/.test(containerId)) return undefined;
    const layouts = this.layout ? [this.layout, ...LAYOUTS.filter((l) => l !== this.layout)] : LAYOUTS;
    for (const layout of layouts) {
      const cpuNs = await layout.cpuNs(this.root, containerId);
      if (cpuNs === undefined || !Number.isFinite(cpuNs)) continue;
      this.layout = layout;
      const memory = await layout.memory(this.root, containerId);
      return {
        cpuSeconds: cpuNs / 1e9,
        ...(memory.peak === undefined ? {} : { memoryPeakBytes: memory.peak }),
        ...(memory.current === undefined ? {} : { memoryBytes: memory.current }),
      };
    }
    return undefined;
  }

  /**
   * Starts the container's memory peak anew from what it holds now, so the next reading's
   * peak is of what ran since (sandbox reuse: a parked sandbox's next session must not be
   * given an earlier session's peak). False when the container's cgroup is not visible from
   * here or its kernel keeps no peak every reader sees (cgroup v2).
   */
  async resetPeak(containerId: string): Promise<boolean> {
    if (!/^[0-9a-f]{64}$/.test(containerId)) return false;
    const layouts = this.layout ? [this.layout, ...LAYOUTS.filter((l) => l !== this.layout)] : LAYOUTS;
    for (const layout of layouts) {
      if ((await layout.cpuNs(this.root, containerId)) === undefined) continue;
      return layout.resetPeak(this.root, containerId);
    }
    return false;
  }
}

/**
 * Read synchronously: a cgroup file is the kernel's counter, answered from memory in
 * microseconds, while fs/promises' readFile makes four trips through libuv's thread pool
 * (open, stat, read, close), each waiting for a thread and a CPU on a loaded host; a usage
 * is three files, read at every session's end and park.
 */
async function readOptional(path: string): Promise<string | undefined> {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

function writeOptional(path: string, text: string): boolean {
  try {
    writeFileSync(path, text);
    return true;
  } catch {
    return false;
  }
}

function bytes(text: string | undefined): number | undefined {
  const value = Number(text?.trim());
  return text !== undefined && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}
