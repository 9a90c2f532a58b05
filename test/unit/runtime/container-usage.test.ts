import type Dockerode from "dockerode";
import { describe, expect, it } from "vitest";
import { usageFromStats } from "../../../src/runtime/docker/container-usage.js";

const stats = (fields: Record<string, unknown>) =>
  ({ read: "2026-11-30T08:23:30.177142147Z", ...fields }) as unknown as Dockerode.ContainerStats;

describe("usageFromStats", () => {
  it("cgroup v1: CPU nanoseconds as seconds, the peak (max_usage) and the memory held now", () => {
    expect(
      usageFromStats(
        stats({
          cpu_stats: { cpu_usage: { total_usage: 955_894_120 } },
          memory_stats: { usage: 884_736, max_usage: 4_321_280, limit: 25_276_026_880 },
        }),
      ),
    ).toEqual({ cpuSeconds: 0.95589412, memoryPeakBytes: 4_321_280, memoryBytes: 884_736 });
  });

  it("cgroup v2: no peak is reported, so none is made up", () => {
    expect(
      usageFromStats(
        stats({ cpu_stats: { cpu_usage: { total_usage: 2e9 } }, memory_stats: { usage: 1_000, stats: {} } }),
      ),
    ).toEqual({ cpuSeconds: 2, memoryBytes: 1_000 });
  });

  it("a stopped container (Docker answers zeros, read at year 1) or a broken answer is no usage", () => {
    expect(
      usageFromStats(
        stats({
          read: "0001-01-01T00:00:00Z",
          cpu_stats: { cpu_usage: { total_usage: 0 } },
          memory_stats: {},
        }),
      ),
    ).toBeUndefined();
    expect(usageFromStats(stats({ cpu_stats: {}, memory_stats: {} }))).toBeUndefined();
    expect(
      usageFromStats(stats({ cpu_stats: { cpu_usage: { total_usage: 5 } }, memory_stats: { usage: -1 } })),
    ).toEqual({ cpuSeconds: 5e-9 });
  });
});
