/**
 * A node's memory restores count against its share of the pool (node-hibernation.ts through
 * node-sandboxes.ts and node-warm-pool.ts): the restored sandbox holds a place as a lease
 * does, a full share refuses the restore with 503 capacity.exhausted before any container
 * starts (the edge then asks the next node), and the place is freed when the sandbox is
 * destroyed, recycled or its restore fails. Stand-ins for the engine, the sandbox client,
 * the checkpoint store and the leases; the real ones are in
 * test/integration/nodes/edge-node-hibernation.test.ts.
 */
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { SandpoolError } from "../../../../src/contract/error-codes.js";
import type { SandboxClient } from "../../../../src/forward/sandbox-client.js";
import type { CheckpointStore } from "../../../../src/hibernate/checkpoint-store.js";
import { NodeHibernation } from "../../../../src/roles/node/node-hibernation.js";
import { NodeSandboxes } from "../../../../src/roles/node/node-sandboxes.js";
import type { SandboxCheckpoints } from "../../../../src/runtime/sandbox-checkpoints.js";
import type { PoolSpec } from "../../../../src/runtime/sandbox-runtime.js";
import type { LeaseStore } from "../../../../src/store/coordination/lease-store.js";
import type { Lease } from "../../../../src/store/coordination/records.js";
import { standInEngine } from "../../../support/stand-in-engine.js";

const WORKSPACE = "ws-a";
/** Shared by one node among one: its share is the whole pool, max 2. */
const POOL = {
  name: "gv",
  image: "sandpool/sandbox:dev",
  isolation: "gvisor",
  minIdle: 0,
  maxTotal: 2,
  coldStartTimeoutMs: 200,
} as PoolSpec;

function node(options: { restoreFails?: boolean } = {}) {
  const state = { restoreFails: options.restoreFails === true };
  const { runtime, running, destroyed, run } = standInEngine();
  const restoresStarted: string[] = [];
  const client = {
    createInnerSession: async () => "inner",
    json: async () => ({ status: 200, body: {} }),
    recycleSandbox: async () => "inner-again",
  } as unknown as SandboxClient;
  const hibernation = {
    checkpointKindOf: () => "memory",
    async restore({ sandboxId }: { sandboxId: string }) {
      restoresStarted.push(sandboxId);
      if (state.restoreFails) throw new Error("the engine refused the restore");
      return run(sandboxId, "r");
    },
  } as unknown as SandboxCheckpoints;
  /** The sessions being restored, as their leases say (session id -> its sandbox id). */
  const restoring = new Map<string, string>();
  const leases = {
    listLeases: async () => [],
    async getLease({ sessionId }: { sessionId: string }) {
      const sandboxId = restoring.get(sessionId);
      if (!sandboxId) return undefined;
      return {
        hibernation: {
          phase: "restoring",
          checkpoint: { kind: "memory", sandboxId, sandboxSessionId: "inner", pool: POOL.name },
        },
      } as unknown as Lease;
    },
  } as unknown as LeaseStore;
  const checkpoints = {
    location: "/checkpoints",
    locate: async (_workspace: string, sessionId: string) => `/checkpoints/${sessionId}`,
  } as unknown as CheckpointStore;
  const log = pino({ level: "silent" });
  const sandboxes = new NodeSandboxes({
    pools: [POOL],
    runtime,
    client,
    store: leases,
    log,
    nodeId: "n1",
    url: "http://n1",
  });
  sandboxes.resize(1, 0);
  made.push(sandboxes);
  const node = new NodeHibernation({
    pools: [POOL],
    sandboxes,
    runtime,
    hibernation,
    checkpoints,
    leases,
    nodeId: "n1",
    shared: false,
    log,
  });
  /** Restores session `id`'s memory checkpoint (sandbox `sandboxId`) here, as the edge asks. */
  const restore = (id: string, sandboxId: string) => {
    restoring.set(id, sandboxId);
    return node.restoreMemory(POOL.name, WORKSPACE, id, { sandboxId, sandboxSessionId: "inner" });
  };
  const leased = () => sandboxes.counts().find((count) => count.state === "leased")!.count;
  return { sandboxes, restore, running, destroyed, restoresStarted, leased, state };
}

const made: NodeSandboxes[] = [];
afterEach(async () => {
  for (const sandboxes of made.splice(0)) await sandboxes.close();
});

const refusal = (error: unknown) => {
  expect(error).toBeInstanceOf(SandpoolError);
  return { code: (error as SandpoolError).code, retry: (error as SandpoolError).retryAfterSeconds };
};

describe("a node's memory restores and its share of the pool", () => {
  it("counts a restored sandbox against the share: a full share refuses restores and leases alike", async () => {
    const parts = node();
    const one = await parts.restore("s1", "aa01");
    expect(one).toMatchObject({ sandboxId: "aa01", neverReuse: true, node: "n1" });
    expect(parts.sandboxes.heldFor("aa01", WORKSPACE)).toBe(one);
    const lease = await parts.sandboxes.lease(POOL.name, "ws-b");
    expect(parts.leased()).toBe(2);

    // The share (2) is full: the next restore is refused before its container starts, with
    // the answer the edge takes for an explicit refusal (it asks the next node).
    const refused = await parts.restore("s2", "aa02").catch((error: unknown) => error);
    expect(refusal(refused)).toEqual({ code: "capacity.exhausted", retry: 2 });
    expect(parts.restoresStarted).toEqual(["aa01"]);
    expect(parts.sandboxes.holds("aa02")).toBe(false);
    // Nor is a lease given beyond it (the pool's start deadline passes first).
    const full = await parts.sandboxes.lease(POOL.name, "ws-b").catch((error: unknown) => error);
    expect(refusal(full).code).toBe("capacity.exhausted");
    expect(parts.running.size).toBe(2);

    // Destroying the restored sandbox (the session's end, or the edge retiring it) frees its place.
    await parts.sandboxes.destroy("aa01");
    expect(parts.destroyed).toContain(one.runtimeId);
    const two = await parts.restore("s2", "aa02");
    expect(two.sandboxId).toBe("aa02");
    expect(parts.leased()).toBe(2);
    await parts.sandboxes.destroy(lease.record.sandboxId);
    await parts.sandboxes.destroy("aa02");
    expect(parts.leased()).toBe(0);
    expect(parts.running.size).toBe(0);
  });

  it("frees the place when the restored sandbox is recycled (never parked: it is destroyed)", async () => {
    const parts = node();
    const one = await parts.restore("s1", "aa01");
    const two = await parts.restore("s2", "aa02");
    expect(await parts.sandboxes.recycle(one, WORKSPACE)).toBe(false);
    expect(parts.destroyed).toEqual([one.runtimeId]);
    expect(parts.sandboxes.counts().find((count) => count.state === "parked")!.count).toBe(0);
    expect((await parts.sandboxes.lease(POOL.name, WORKSPACE)).reused).toBe(false);
    // The lease took the recycled one's place; the other restored one still holds its own.
    const refused = await parts.restore("s3", "aa03").catch((error: unknown) => error);
    expect(refusal(refused).code).toBe("capacity.exhausted");
    await parts.sandboxes.destroy(two.sandboxId);
    expect((await parts.restore("s3", "aa03")).sandboxId).toBe("aa03");
  });

  it("gives the place back when a restore fails", async () => {
    const parts = node({ restoreFails: true });
    for (const id of ["s1", "s2", "s3"]) {
      await expect(parts.restore(id, `aa0${id.at(-1)}`)).rejects.toThrow("refused the restore");
    }
    // Three failed restores on a share of two: each one's place was freed, nothing is held.
    expect(parts.restoresStarted).toHaveLength(3);
    expect(parts.leased()).toBe(0);
    const lease = await parts.sandboxes.lease(POOL.name, WORKSPACE);
    parts.state.restoreFails = false;
    await parts.restore("s4", "aa04");
    expect(parts.leased()).toBe(2);
    // And the share holds: nothing more.
    const refused = await parts.restore("s5", "aa05").catch((error: unknown) => error);
    expect(refusal(refused).code).toBe("capacity.exhausted");
    await parts.sandboxes.destroy(lease.record.sandboxId);
  });
});
