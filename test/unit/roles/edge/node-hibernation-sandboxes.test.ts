/**
 * Where an edge asks nodes to resume a hibernated session (node-hibernation-sandboxes.ts):
 * a node-local checkpoint on its own node alone (503 session.resume_failed with Retry-After
 * while that node is away, nothing asked of another), a shared one on any node that offers
 * the pool; a node gVisor lost the sandbox on says so. The nodes are stand-ins recording what
 * they are asked (test/integration/nodes/edge-node-hibernation.test.ts drives real ones).
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../../src/contract/error-codes.js";
import type { SessionRestoreRequest } from "../../../../src/hibernate/hibernation-sandboxes.js";
import type { NodeClient } from "../../../../src/roles/edge/node-client.js";
import type { NodeDirectory } from "../../../../src/roles/edge/node-directory.js";
import { NodeHibernationSandboxes } from "../../../../src/roles/edge/node-hibernation-sandboxes.js";
import type { RoutedPools } from "../../../../src/roles/edge/routed-pools.js";
import type { NodeView } from "../../../../src/roles/shared/node-registry.js";
import { SandboxLostInCheckpointError } from "../../../../src/runtime/sandbox-checkpoints.js";
import type { PoolSpec } from "../../../../src/runtime/sandbox-runtime.js";
import type { CheckpointRecord, Lease, SandboxRecord } from "../../../../src/store/coordination/records.js";

const IMAGE = "sandpool/sandbox:dev";
const container = { name: "default", image: IMAGE, coldStartTimeoutMs: 1_000 } as PoolSpec;
const gvisor = { name: "gv", image: IMAGE, isolation: "gvisor", coldStartTimeoutMs: 1_000 } as PoolSpec;
const key = { workspace: "team-a", sessionId: "s1" };

function node(id: string, extra: Partial<NodeView> = {}): NodeView {
  return {
    id,
    url: `http://${id}:8091`,
    capacity: { default: 4, gv: 4 },
    images: [IMAGE],
    isolation: ["container", "gvisor"],
    freeWarm: { default: 1, gv: 0 },
    leased: 0,
    state: "ready",
    draining: false,
    heartbeatAt: 0,
    ...extra,
  };
}

function sandbox(nodeId: string, sandboxId = "abc1"): SandboxRecord {
  return {
    sandboxId,
    pool: "default",
    endpoint: `node:${nodeId}/${sandboxId}/team-a`,
    runtimeId: "0:c1",
    innerSessionId: "inner",
    createdAt: 0,
    node: nodeId,
  };
}

function checkpoint(kind: "files" | "memory", nodeId: string): CheckpointRecord {
  return {
    kind,
    bytes: 10,
    sandboxId: "abc1",
    sandboxSessionId: "inner",
    pool: kind === "files" ? "default" : "gv",
    hibernatedAt: 0,
    node: nodeId,
  };
}

/** Stand-in nodes: each call recorded as `node path`, answered by `answer`. */
function setUp(
  nodes: NodeView[],
  shared: boolean,
  answer: (node: string, path: string) => unknown = () => ({}),
) {
  const calls: string[] = [];
  const leasedAmong: string[][] = [];
  const respond = async (nodeId: string, path: string) => {
    calls.push(`${nodeId} ${path}`);
    const body = answer(nodeId, path);
    if (body instanceof Error) throw body;
    return body;
  };
  const client = {
    nodeJson: async (nodeId: string, forward: { path: string }) => ({
      status: 200,
      body: await respond(nodeId, forward.path),
    }),
    call: async (nodeId: string, forward: { path: string }) => {
      await respond(nodeId, forward.path);
      return { statusCode: 204, body: { dump: async () => {} } };
    },
  } as unknown as NodeClient;
  const directory = {
    list: () => nodes,
    get: (id: string) => nodes.find((candidate) => candidate.id === id),
  } as unknown as NodeDirectory;
  const routed = {
    lease: async (_pool: PoolSpec, _hold: unknown, among?: (node: NodeView) => boolean) => {
      const asked = nodes.filter((candidate) => candidate.state === "ready" && (among?.(candidate) ?? true));
      leasedAmong.push(asked.map((candidate) => candidate.id));
      if (asked.length === 0) throw new SandpoolError("capacity.exhausted", "none");
      return { record: sandbox(asked[0]!.id, "fresh1"), warm: true, reused: false };
    },
    retire: async (record: SandboxRecord) => {
      calls.push(`retire ${record.sandboxId}`);
    },
  } as unknown as RoutedPools;
  const steps = new NodeHibernationSandboxes({
    pools: [container, gvisor],
    routed,
    nodes: client,
    directory,
    shared,
    log: pino({ level: "silent" }),
  });
  return { steps, calls, leasedAmong };
}

function restoreRequest(record: CheckpointRecord, named: SandboxRecord[] = []): SessionRestoreRequest {
  return {
    key,
    lease: { sandbox: sandbox(record.node!) } as Lease,
    pool: record.kind === "files" ? container : gvisor,
    checkpoint: record,
    hold: { workspace: "team-a", until: 1, now: 0 },
    name: async (record) => {
      named.push(record);
    },
  };
}

describe("NodeHibernationSandboxes", () => {
  it("asks no second node to restore a memory checkpoint when the first did not answer, and retires what it may have started", async () => {
    const nodes = [node("a", { freeWarm: { gv: 2 } }), node("b")];
    const { steps, calls } = setUp(nodes, true, (_node, path) =>
      path === "/node/v1/restores" ? new SandpoolError("sandbox.timeout", "no answer in time") : {},
    );
    const failed = await steps
      .restore(restoreRequest(checkpoint("memory", "a")))
      .catch((error: unknown) => error);
    expect((failed as SandpoolError).code).toBe("session.resume_failed");
    expect(calls).toEqual(["a /node/v1/restores", "retire abc1"]);
  });

  it("tries the next node when one refuses a memory restore", async () => {
    const nodes = [node("a", { freeWarm: { gv: 2 } }), node("b")];
    const { steps, calls } = setUp(nodes, true, (nodeId, path) =>
      path !== "/node/v1/restores"
        ? {}
        : nodeId === "a"
          ? new SandpoolError("capacity.exhausted", "full")
          : { record: sandbox("b", "abc1") },
    );
    const record = await steps.restore(restoreRequest(checkpoint("memory", "a")));
    expect(record.node).toBe("b");
    expect(calls).toEqual(["a /node/v1/restores", "b /node/v1/restores"]);
  });

  it("hibernates no idle session of a draining node unless checkpoints are shared", () => {
    const nodes = [node("a", { draining: true }), node("b")];
    const onA = { sandbox: sandbox("a"), node: "a" } as Lease;
    const onB = { sandbox: sandbox("b"), node: "b" } as Lease;
    const local = setUp(nodes, false).steps;
    expect(local.hibernatesIdle(onA)).toBe(false);
    expect(local.hibernatesIdle(onB)).toBe(true);
    expect(setUp(nodes, true).steps.hibernatesIdle(onA)).toBe(true);
  });

  it("keeps a node-local checkpoint's resume on its node, and says 503 with Retry-After while it is away", async () => {
    const nodes = [node("a", { state: "lost" }), node("b")];
    const { steps, calls, leasedAmong } = setUp(nodes, false);
    const refused = await steps
      .restore(restoreRequest(checkpoint("files", "a")))
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SandpoolError);
    expect((refused as SandpoolError).code).toBe("session.resume_failed");
    expect((refused as SandpoolError).retryAfterSeconds).toBeGreaterThan(0);
    expect(calls).toEqual([]);
    expect(leasedAmong).toEqual([]);

    nodes[0]!.state = "ready";
    const named: SandboxRecord[] = [];
    const record = await steps.restore(restoreRequest(checkpoint("files", "a"), named));
    expect(leasedAmong).toEqual([["a"]]);
    expect(record.node).toBe("a");
    // The lease names the sandbox before the node restores into it.
    expect(named).toEqual([record]);
    expect(calls).toEqual(["a /node/v1/sandboxes/fresh1/restore"]);
  });

  it("resumes a shared checkpoint on any node offering the pool, the one that saved it gone", async () => {
    const nodes = [node("a", { state: "lost" }), node("b")];
    const { steps, calls, leasedAmong } = setUp(nodes, true, (nodeId, path) =>
      path === "/node/v1/restores" ? { record: { ...sandbox(nodeId), endpoint: "http://local" } } : {},
    );
    const files = await steps.restore(restoreRequest(checkpoint("files", "a")));
    expect(leasedAmong).toEqual([["b"]]);
    expect(files.node).toBe("b");
    const memory = await steps.restore(restoreRequest(checkpoint("memory", "a")));
    expect(memory).toMatchObject({ node: "b", sandboxId: "abc1", endpoint: "node:b/abc1/team-a" });
    expect(calls).toEqual(["b /node/v1/sandboxes/fresh1/restore", "b /node/v1/restores"]);
  });

  it("retires the leased sandbox when its node cannot restore into it; the error is the node's", async () => {
    const { steps, calls } = setUp([node("a")], false, (_node, path) =>
      path.endsWith("/restore") ? new SandpoolError("session.resume_failed", "no checkpoint here") : {},
    );
    const failed = await steps
      .restore(restoreRequest(checkpoint("files", "a")))
      .catch((error: unknown) => error);
    expect((failed as SandpoolError).code).toBe("session.resume_failed");
    expect(calls).toEqual(["a /node/v1/sandboxes/fresh1/restore", "retire fresh1"]);
  });

  it("saves on the node holding the sandbox, and reports a sandbox gVisor lost as lost", async () => {
    let outcome: unknown = { outcome: "saved", kind: "files", bytes: 7 };
    const { steps, calls } = setUp([node("a")], false, () => outcome);
    const lease = { node: "a", sandbox: sandbox("a") } as Lease;
    expect(steps.holderOf(lease)).toBe("a");
    expect(await steps.save({ key, lease, pool: container, bounds: {} })).toEqual({
      kind: "files",
      bytes: 7,
    });
    expect(calls).toEqual(["a /node/v1/sandboxes/abc1/checkpoint"]);
    outcome = { outcome: "lost", message: "runsc failed" };
    await expect(steps.save({ key, lease, pool: container, bounds: {} })).rejects.toBeInstanceOf(
      SandboxLostInCheckpointError,
    );
  });

  it("deletes a checkpoint on its node, or any node on a shared store; one away is left to its reconciliation", async () => {
    const nodes = [node("a", { state: "lost" }), node("b")];
    const local = setUp(nodes, false);
    await local.steps.deleteCheckpoint(key, checkpoint("files", "a"));
    expect(local.calls).toEqual([]);
    const shared = setUp(nodes, true);
    await shared.steps.deleteCheckpoint(key, checkpoint("files", "a"));
    expect(shared.calls).toEqual(["b /node/v1/checkpoints/s1/delete"]);
  });

  it("knows which pools hibernate: gVisor with memory, containers with files", () => {
    const { steps } = setUp([], false);
    expect(steps.kindOf(gvisor)).toBe("memory");
    expect(steps.kindOf(container)).toBe("files");
    expect(steps.kindOf({ ...container, egress: true })).toBeUndefined();
    expect(steps.pool("gv")).toBe(gvisor);
  });
});
