/**
 * Reading a container's usage straight from its cgroup files, in each layout Docker makes
 * (cgroup v1 and v2, cgroupfs and systemd drivers), laid out in a temporary folder.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CgroupUsageReader } from "../../../src/runtime/docker/cgroup-usage.js";

const ID = "a".repeat(64);
let root: string;

function write(file: string, text: string): void {
  mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  writeFileSync(path.join(root, file), text);
}

afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("CgroupUsageReader", () => {
  it("reads cgroup v1 (cgroupfs driver): CPU in nanoseconds, memory now and at its peak", async () => {
    root = mkdtempSync(path.join(tmpdir(), "cgroup-"));
    write(`cpuacct/docker/${ID}/cpuacct.usage`, "2500000000\n");
    write(`memory/docker/${ID}/memory.usage_in_bytes`, "1048576\n");
    write(`memory/docker/${ID}/memory.max_usage_in_bytes`, "4194304\n");
    expect(await new CgroupUsageReader(root).read(ID)).toEqual({
      cpuSeconds: 2.5,
      memoryBytes: 1_048_576,
      memoryPeakBytes: 4_194_304,
    });
  });

  it("reads cgroup v2 (systemd driver): usage_usec from cpu.stat", async () => {
    root = mkdtempSync(path.join(tmpdir(), "cgroup-"));
    write(
      `system.slice/docker-${ID}.scope/cpu.stat`,
      "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n",
    );
    write(`system.slice/docker-${ID}.scope/memory.current`, "2048\n");
    expect(await new CgroupUsageReader(root).read(ID)).toEqual({ cpuSeconds: 1.5, memoryBytes: 2048 });
  });

  it("starts a cgroup v1 memory peak anew (a 0 written), and says it cannot on cgroup v2 or for a container it cannot see", async () => {
    root = mkdtempSync(path.join(tmpdir(), "cgroup-"));
    write(`cpuacct/system.slice/docker-${ID}.scope/cpuacct.usage`, "1\n");
    write(`memory/system.slice/docker-${ID}.scope/memory.max_usage_in_bytes`, "4194304\n");
    const reader = new CgroupUsageReader(root);
    expect(await reader.resetPeak(ID)).toBe(true);
    expect(
      readFileSync(
        path.join(root, `memory/system.slice/docker-${ID}.scope/memory.max_usage_in_bytes`),
        "utf8",
      ),
    ).toBe("0");
    expect(await reader.resetPeak("b".repeat(64))).toBe(false);
    expect(await reader.resetPeak("../../etc")).toBe(false);

    const v2 = mkdtempSync(path.join(tmpdir(), "cgroup-"));
    try {
      mkdirSync(path.join(v2, `docker/${ID}`), { recursive: true });
      writeFileSync(path.join(v2, `docker/${ID}/cpu.stat`), "usage_usec 1\n");
      writeFileSync(path.join(v2, `docker/${ID}/memory.peak`), "4194304\n");
      expect(await new CgroupUsageReader(v2).resetPeak(ID)).toBe(false);
      expect(readFileSync(path.join(v2, `docker/${ID}/memory.peak`), "utf8")).toBe("4194304\n");
    } finally {
      rmSync(v2, { recursive: true, force: true });
    }
  });

  it("answers nothing for a container it cannot see, or an id that is not a full container id", async () => {
    root = mkdtempSync(path.join(tmpdir(), "cgroup-"));
    write(`cpuacct/docker/${ID}/cpuacct.usage`, "1\n");
    const reader = new CgroupUsageReader(root);
    expect(await reader.read("b".repeat(64))).toBeUndefined();
    expect(await reader.read("../../etc")).toBeUndefined();
    expect(await reader.read(ID.slice(0, 12))).toBeUndefined();
  });
});
