/**
 * A node's pool and its starts, as on one host: a burst of leases on a dry pool keeps to the
 * start gate (src/pool/start-gate.ts) and every lease still gets a sandbox of its own; a
 * failing image is tried again after a back-off (src/pool/start-backoff.ts), not in a loop.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { SandboxClient } from "../../../../src/forward/sandbox-client.js";
import { BURST_STARTS_MAX } from "../../../../src/pool/start-gate.js";
import { NodeWarmPool } from "../../../../src/roles/node/node-warm-pool.js";
import type { PoolSpec, SandboxRuntime } from "../../../../src/runtime/sandbox-runtime.js";

const spec: PoolSpec = {
  name: "a",
  image: "img",
  resourceClass: "standard",
  minIdle: 0,
  maxTotal: 100,
  warmupConcurrency: 2,
  coldStartTimeoutMs: 30_000,
};

function failingRuntime() {
  const counts = { starts: 0 };
  const runtime: SandboxRuntime = {
    kind: "process",
    isolated: false,
    start: async () => {
      counts.starts++;
      throw new Error("no such image");
    },
    destroy: async () => undefined,
    list: async () => [],
    close: async () => undefined,
  };
  return { runtime, counts };
}

describe("a node's pool under a burst", () => {
  it("tries a failing image again after a back-off, and fails the lease at its deadline", async () => {
    const { runtime, counts } = failingRuntime();
    const lines: string[] = [];
    const pool = new NodeWarmPool(
      { ...spec, coldStartTimeoutMs: 2_500 },
      { min: 0, max: 10 },
      {
        runtime,
        client: { createInnerSession: async () => "inner" } as unknown as SandboxClient,
        log: pino({ level: "warn" }, { write: (line: string) => lines.push(line) }),
        nodeId: "n1",
      },
    );
    try {
      await expect(pool.acquire()).rejects.toMatchObject({ code: "capacity.exhausted" });
      // Tries at 0, ~1 s and ~2 s (before, it tried again as fast as the start failed).
      expect(counts.starts).toBeGreaterThanOrEqual(2);
      expect(counts.starts).toBeLessThanOrEqual(4);
      expect(lines.filter((line) => line.includes("starts back off")).length).toBe(counts.starts);
    } finally {
      await pool.close();
    }
  });

  it("starts at most BURST_STARTS_MAX sandboxes at once and serves every lease", async () => {
    const counts = { inFlight: 0, most: 0, started: 0 };
    const runtime: SandboxRuntime = {
      kind: "process",
      isolated: false,
      start: async () => {
        counts.inFlight++;
        counts.most = Math.max(counts.most, counts.inFlight);
        await new Promise((resolve) => setTimeout(resolve, 15));
        counts.inFlight--;
        counts.started++;
        return { runtimeId: `rt-${counts.started}`, endpoint: "http://127.0.0.1:9" };
      },
      destroy: async () => undefined,
      list: async () => [],
      close: async () => undefined,
    };
    const pool = new NodeWarmPool(
      spec,
      { min: 0, max: 100 },
      {
        runtime,
        client: { createInnerSession: async () => "inner" } as unknown as SandboxClient,
        log: pino({ level: "silent" }),
        nodeId: "n1",
      },
    );
    try {
      const leased = await Promise.all(Array.from({ length: 30 }, () => pool.acquire()));
      expect(new Set(leased.map(({ record }) => record.sandboxId)).size).toBe(30);
      expect(counts.most).toBeGreaterThan(1);
      expect(counts.most).toBeLessThanOrEqual(BURST_STARTS_MAX);
    } finally {
      await pool.close();
    }
  });
});
