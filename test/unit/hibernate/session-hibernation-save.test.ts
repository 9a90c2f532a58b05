/**
 * A save that fails (SessionHibernation.hibernate) around stand-in sandbox steps and the
 * memory store: a failure that refuses nothing for sure (a node's answer lost or late) is
 * checked against the checkpoint store, so a checkpoint committed all the same leaves the
 * session hibernated and its sandbox retired; one that was not leaves it running, its
 * sandbox never reused.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
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

async function setUp(committed: boolean) {
  const leases = new MemoryCoordinationStore();
  const now = Date.now();
  const lease: Lease = {
    ...key,
    pool: "default",
    image: "img",
    sandbox,
    createdAt: now,
    lastActivityAt: now,
    idleTimeoutSeconds: 600,
    maxLifetimeSeconds: 3600,
  };
  await leases.putLease(lease);
  const retired: string[] = [];
  const sandboxes = {
    pool: () => pool,
    kindOf: () => "files",
    holderOf: () => "node-one",
    save: async () => {
      throw new SandpoolError("sandbox.timeout", "the node did not answer in time");
    },
    committed: async () => committed,
    retire: async (record: SandboxRecord) => {
      retired.push(record.sandboxId);
    },
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
  });
  return { leases, hibernation, retired };
}

describe("a save whose answer was lost", () => {
  it("stands when its checkpoint was committed: the session is hibernated and its sandbox goes", async () => {
    const { leases, hibernation, retired } = await setUp(true);
    const lease = await hibernation.hibernate(key);
    expect(lease.hibernation?.phase).toBe("saved");
    expect((await leases.getLease(key))?.hibernation?.phase).toBe("saved");
    expect(retired).toEqual(["abc1"]);
  });

  it("leaves the session running when nothing was committed, its sandbox never reused", async () => {
    const { leases, hibernation, retired } = await setUp(false);
    await expect(hibernation.hibernate(key)).rejects.toMatchObject({ code: "sandbox.timeout" });
    const lease = await leases.getLease(key);
    expect(lease?.hibernation).toBeUndefined();
    expect(lease?.sandbox.neverReuse).toBe(true);
    expect(retired).toEqual([]);
  });
});
