/**
 * A resume is the session's activity (SessionHibernation.resume around stand-in sandbox
 * steps and the memory store): a session hibernated for most of its idle timeout comes back
 * with its last activity at its resume, so neither the reaper nor its own call find it
 * expired.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { HibernationSandboxes } from "../../../src/hibernate/hibernation-sandboxes.js";
import { SessionHibernation } from "../../../src/hibernate/session-hibernation.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import type { PoolSpec } from "../../../src/runtime/sandbox-runtime.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";
import { type Lease, leaseDeadline, type SandboxRecord } from "../../../src/store/coordination/records.js";

const pool = { name: "default", image: "img", coldStartTimeoutMs: 1_000 } as PoolSpec;
const key = { workspace: "team-a", sessionId: "s1" };
const record = (sandboxId: string): SandboxRecord => ({
  sandboxId,
  pool: "default",
  endpoint: "http://127.0.0.1:9",
  runtimeId: `0:${sandboxId}`,
  innerSessionId: "inner",
  createdAt: 0,
});

describe("a resumed session's last activity", () => {
  it("is its resume, not its last call before it hibernated", async () => {
    let clock = 1_000_000;
    const leases = new MemoryCoordinationStore();
    const lease: Lease = {
      ...key,
      pool: "default",
      image: "img",
      sandbox: record("before"),
      createdAt: clock,
      lastActivityAt: clock,
      idleTimeoutSeconds: 60,
      maxLifetimeSeconds: 3600,
    };
    await leases.putLease(lease);
    let restoredAt: number | undefined;
    const sandboxes = {
      pool: () => pool,
      kindOf: () => "files",
      holderOf: () => undefined,
      save: async () => ({ kind: "files", bytes: 10 }),
      restore: async () => {
        // While the restore runs, its claim already counts as activity: the reaper passes it by.
        expect(await leases.dueLeases(clock + 30_000, 10)).toEqual([]);
        clock += 3_000; // a restore takes seconds
        restoredAt = clock;
        return record("after");
      },
      deleteCheckpoint: async () => undefined,
    } as unknown as HibernationSandboxes;
    const hibernation = new SessionHibernation({
      leases,
      sandboxes,
      boundsOf: async () => ({}),
      settleSandbox: async () => undefined,
      sandboxLost: async () => undefined,
      metrics: new GatewayMetrics({ processMetrics: false }),
      usage: { record: () => undefined } as never,
      log: pino({ level: "silent" }),
      now: () => clock,
    });
    clock += 10_000;
    await hibernation.hibernate(key);
    // 58 s after its last call, two before its idle deadline, a call resumes it.
    clock = lease.lastActivityAt + 58_000;
    const { lease: resumed } = await hibernation.resume(key);
    expect(resumed.sandbox.sandboxId).toBe("after");
    expect(resumed.lastActivityAt).toBe(restoredAt);
    expect(leaseDeadline(resumed)).toBe(restoredAt! + 60_000);
    expect(await leases.dueLeases(clock, 10)).toEqual([]);
    expect((await leases.beginCall(key, { now: clock, busyUntil: clock + 1_000 })).outcome).toBe("started");
  });
});
