/**
 * A node's parked sandboxes (node-parking.ts through node-sandboxes.ts), around a stand-in
 * engine and sandbox client: the real sandboxes are in test/integration/nodes/edge-node-reuse.test.ts.
 */
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { SandboxClient } from "../../../../src/forward/sandbox-client.js";
import { MAX_USES } from "../../../../src/pool/sandbox-reuse.js";
import { NodeSandboxes } from "../../../../src/roles/node/node-sandboxes.js";
import type { PoolSpec } from "../../../../src/runtime/sandbox-runtime.js";
import type { LeaseStore } from "../../../../src/store/coordination/lease-store.js";
import { standInEngine } from "../../../support/stand-in-engine.js";

const POOL = {
  name: "default",
  image: "sandpool/sandbox:dev",
  minIdle: 0,
  maxTotal: 2,
  coldStartTimeoutMs: 1_000,
} as PoolSpec;

function engine(options: { scrubFails?: boolean; scrubHeld?: boolean } = {}) {
  const { runtime, running, destroyed } = standInEngine();
  const scrubbed: string[] = [];
  const heldScrubs: (() => void)[] = [];
  let inner = 0;
  const client = {
    async createInnerSession() {
      inner += 1;
      return `inner-${inner}`;
    },
    async recycleSandbox(endpoint: string) {
      if (options.scrubFails) throw new Error("the scrub found a survivor");
      if (options.scrubHeld) await new Promise<void>((resolve) => heldScrubs.push(resolve));
      scrubbed.push(endpoint.split("/").at(-1)!);
      inner += 1;
      return `inner-${inner}`;
    },
    async json() {
      return { status: 200, body: {} };
    },
  } as unknown as SandboxClient;
  const finishScrubs = () => {
    for (const resolve of heldScrubs.splice(0)) resolve();
  };
  return { runtime, client, running, destroyed, scrubbed, finishScrubs };
}

const made: NodeSandboxes[] = [];
function nodeOf(parts: ReturnType<typeof engine>, pool: PoolSpec = POOL) {
  const sandboxes = new NodeSandboxes({
    pools: [pool],
    runtime: parts.runtime,
    client: parts.client,
    store: { listLeases: async () => [] } as unknown as LeaseStore,
    log: pino({ level: "silent" }),
    nodeId: "n1",
    url: "http://n1",
  });
  sandboxes.resize(1, 0);
  made.push(sandboxes);
  return sandboxes;
}
afterEach(async () => {
  for (const sandboxes of made.splice(0)) await sandboxes.close();
});

const parked = (sandboxes: NodeSandboxes) =>
  sandboxes.counts().find((count) => count.state === "parked")!.count;

describe("a node's parked sandboxes", () => {
  it("parks a scrubbed sandbox for its workspace's next lease, and for no other workspace's", async () => {
    const parts = engine();
    const node = nodeOf(parts);
    const first = await node.lease("default", "ws-a");
    expect(first.reused).toBe(false);
    expect(await node.recycle(first.record, "ws-a")).toBe(true);
    expect(parts.scrubbed).toEqual([first.record.runtimeId]);
    expect(parked(node)).toBe(1);
    // Held for no session now: calls on it are refused until a lease takes it.
    expect(node.holds(first.record.sandboxId)).toBe(false);

    const other = await node.lease("default", "ws-b");
    expect(other.reused).toBe(false);
    expect(other.record.runtimeId).not.toBe(first.record.runtimeId);
    const again = await node.lease("default", "ws-a");
    expect(again).toMatchObject({ reused: true, warm: true });
    expect(again.record).toMatchObject({
      sandboxId: first.record.sandboxId,
      runtimeId: first.record.runtimeId,
      owner: "ws-a",
      uses: 1,
      innerSessionId: "inner-2",
    });
    expect(node.heldFor(again.record.sandboxId, "ws-a")).toBe(again.record);
    expect(node.heldFor(again.record.sandboxId, "ws-b")).toBeUndefined();
    expect(parked(node)).toBe(0);
  });

  it("starts one more sandbox while a lease waits for its workspace's scrub, and hands the scrubbed one over", async () => {
    const parts = engine({ scrubHeld: true });
    const node = nodeOf(parts, { ...POOL, maxTotal: 4 });
    const first = await node.lease("default", "ws-a");
    const recycling = node.recycle(first.record, "ws-a");
    const waiting = node.lease("default", "ws-a");
    // The engine is asked for one more while the lease waits: a session after it may need it.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(parts.running.size).toBe(2);
    parts.finishScrubs();
    expect(await recycling).toBe(true);
    expect(await waiting).toMatchObject({ reused: true, record: { sandboxId: first.record.sandboxId } });
    // The one started meanwhile is idle, for the next lease of any workspace.
    const next = await node.lease("default", "ws-b");
    expect(next).toMatchObject({ warm: true, reused: false });
    expect(parts.running.size).toBe(2);
  });

  it("keeps parked sandboxes through a reconciliation, which destroys what nothing holds", async () => {
    const parts = engine();
    const node = nodeOf(parts);
    const leased = await node.lease("default", "ws-a");
    await node.recycle(leased.record, "ws-a");
    parts.running.set("stray", "0123");
    expect(await node.reconcile()).toEqual({ adopted: 0, destroyed: 1 });
    expect(parts.destroyed).toEqual(["stray"]);
    expect((await node.lease("default", "ws-a")).reused).toBe(true);
  });

  it("leases fresh when the workspace's policy turns reuse off, its parked one giving its place at max", async () => {
    const parts = engine();
    const node = nodeOf(parts);
    const one = await node.lease("default", "ws-a");
    const two = await node.lease("default", "ws-a");
    await node.recycle(one.record, "ws-a");
    await node.recycle(two.record, "ws-a");
    expect(parked(node)).toBe(2);
    const fresh = await node.lease("default", "ws-a", { reuse: false });
    expect(fresh.reused).toBe(false);
    // The longest-parked one made room (the share's max is 2).
    expect(parts.destroyed).toEqual([one.record.runtimeId]);
    expect(parked(node)).toBe(1);
  });

  it("destroys instead of parking: a failed scrub, a sandbox past its uses, a draining node", async () => {
    const failing = engine({ scrubFails: true });
    const node = nodeOf(failing);
    const leased = await node.lease("default", "ws-a");
    expect(await node.recycle(leased.record, "ws-a")).toBe(false);
    expect(failing.destroyed).toEqual([leased.record.runtimeId]);
    expect(node.holds(leased.record.sandboxId)).toBe(false);

    const parts = engine();
    const other = nodeOf(parts);
    const worn = await other.lease("default", "ws-a");
    worn.record.uses = MAX_USES - 1;
    expect(await other.recycle(worn.record, "ws-a")).toBe(false);
    expect(parts.scrubbed).toEqual([]);
    const kept = await other.lease("default", "ws-a");
    expect(await other.recycle(kept.record, "ws-a")).toBe(true);
    const last = await other.lease("default", "ws-b");
    other.draining = true;
    other.resize(1, 0);
    expect(await other.recycle(last.record, "ws-b")).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(parked(other)).toBe(0);
    expect(parts.running.size).toBe(0);
  });
});
