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
import { readFileSync } from "node:fs";
import type { SandboxUsage } from "../sandbox-runtime.js";

interface CgroupLayout {
  /** The files of one container, or undefined when this layout does not hold it. */
  cpuNs(root: string, id: string): Promise<number | undefined>;
  memory(root: string, id: string): Promise<{ current?: number; peak?: number }>;
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

function bytes(text: string | undefined): number | undefined {
  const value = Number(text?.trim());
  return text !== undefined && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}
