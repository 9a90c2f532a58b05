/**
 * What a sandbox really used, from its cgroup as Docker's stats API reports it (one sample,
 * `one-shot`): CPU time of every process in the container, and memory.
 *
 * Peak memory is cgroup v1's `memory.max_usage_in_bytes` (`memory_stats.max_usage`): the
 * most the container's cgroup held at once over its life, page cache included. Docker
 * reports no peak on cgroup v2, so there `memoryPeakBytes` is absent and only the memory
 * held at the moment of reading (`memory_stats.usage`) is known.
 */
import type Dockerode from "dockerode";
import type { SandboxUsage } from "../sandbox-runtime.js";

/** Reads Docker's stats; undefined for a container that is not running (Docker then reports zeros). */
export function usageFromStats(stats: Dockerode.ContainerStats): SandboxUsage | undefined {
  if (!stats.read || stats.read.startsWith("0001-01-01")) return undefined;
  const cpuNanoseconds = stats.cpu_stats?.cpu_usage?.total_usage;
  if (typeof cpuNanoseconds !== "number" || !Number.isFinite(cpuNanoseconds)) return undefined;
  const memory = stats.memory_stats as { usage?: number; max_usage?: number } | undefined;
  return {
    cpuSeconds: cpuNanoseconds / 1e9,
    ...(isBytes(memory?.max_usage) ? { memoryPeakBytes: memory.max_usage } : {}),
    ...(isBytes(memory?.usage) ? { memoryBytes: memory.usage } : {}),
  };
}

function isBytes(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}
