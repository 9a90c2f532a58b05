/**
 * A hibernation refused at a bound (SessionHibernation.hibernate around stand-in sandbox
 * steps and the memory store): the session keeps running on its sandbox (still reusable:
 * the store refused before anything touched it), the answer names the bound, the lease keeps
 * the refusal for the admin view, an idle session the store refused is not tried again at
 * once (one at its workspace's bound is), and a save committed later clears it.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { CheckpointBoundError } from "../../../src/hibernate/checkpoint-store.js";
import type { HibernationSandboxes } from "../../../src/hibernate/hibernation-sandboxes.js";
import { SessionHibernation } from "../../../src/hibernate/session-hibernation.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import type { PoolSpec } from "../../../src/runtime/sandbox-runtime.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";
import type { Lease, SandboxRecord } from "../../../src/store/coordination/records.js";

const pool = { name: "default", image: "img", coldStartTimeoutMs: 1_000 } as PoolSpec;
const key = { workspace: "team-a", sessionId: "s1" };
const sandbox: SandboxRecord = {
  sandboxId: "abc1",
  pool: "default",
  endpoint: "http://127.0.0.1:9",
  runtimeId: "0:c1",
  innerSessionId: "inner",
  createdAt: 0,
};

describe("a hibernation refused at a bound", () => {
  it("leaves the session running, says why in its answer and its lease, and is not retried at once", async () => {
    let clock = 1_000_000;
    const leases = new MemoryCoordinationStore();
    const lease: Lease = {
      ...key,
      pool: "default",
      image: "img",
      sandbox,
      createdAt: clock,
      lastActivityAt: clock,
      idleTimeoutSeconds: 600,
      maxLifetimeSeconds: 3600,
    };
    await leases.putLease(lease);
    let full = true;
    const sandboxes = {
      pool: () => pool,
      kindOf: () => "files",
      holderOf: () => undefined,
      save: async () => {
        if (full)
          throw new CheckpointBoundError("the checkpoint store's disk has 10 bytes free", "disk_free");
        return { kind: "files", bytes: 10 };
      },
      committed: async () => false,
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

    await expect(hibernation.hibernate(key)).rejects.toMatchObject({
      code: "capacity.checkpoint_space",
      status: 503,
      message: expect.stringContaining("10 bytes free"),
    });
    const running = (await leases.getLease(key))!;
    expect(running.hibernation).toBeUndefined();
    expect(running.sandbox).toEqual(sandbox);
    expect(running.hibernationRefused).toEqual({
      code: "capacity.checkpoint_space",
      message: expect.stringContaining("10 bytes free"),
      at: clock,
    });
    expect(hibernation.hibernatesIdle(running)).toBe(false);
    clock += 60_000;
    expect(hibernation.hibernatesIdle(running)).toBe(true);

    // A workspace's own bound is its quota, kept the same way.
    const bounded = {
      ...sandboxes,
      save: async () => {
        throw new CheckpointBoundError("workspace team-a keeps 2 hibernated sessions", "workspace_sessions");
      },
    } as HibernationSandboxes;
    const atQuota = new SessionHibernation({
      leases,
      sandboxes: bounded,
      boundsOf: async () => ({ maxCheckpoints: 2 }),
      settleSandbox: async () => undefined,
      sandboxLost: async () => undefined,
      metrics: new GatewayMetrics({ processMetrics: false }),
      usage: { record: () => undefined } as never,
      log: pino({ level: "silent" }),
      now: () => clock,
    });
    await expect(atQuota.hibernate(key)).rejects.toMatchObject({
      code: "quota.hibernated_sessions",
      status: 429,
    });
    const atItsBound = (await leases.getLease(key))!;
    expect(atItsBound.hibernationRefused?.code).toBe("quota.hibernated_sessions");
    // Its room comes back as another of its sessions resumes: it is tried at the next round.
    expect(atQuota.hibernatesIdle(atItsBound)).toBe(true);

    // Room again: the save is committed and the refusal is gone.
    full = false;
    const saved = await hibernation.hibernate(key);
    expect(saved.hibernation?.phase).toBe("saved");
    expect(saved.hibernationRefused).toBeUndefined();
  });
});
