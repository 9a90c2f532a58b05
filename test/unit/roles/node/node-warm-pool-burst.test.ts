/**
 * A burst of leases on a node's dry pool: its starts keep to the start gate (as on one host,
 * src/pool/start-gate.ts) and every lease still gets a sandbox of its own.
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

describe("a node's pool under a burst", () => {
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
