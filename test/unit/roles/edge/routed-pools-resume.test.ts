/**
 * What hibernation asks of the edge's pools (routed-pools.ts): a files resume from a
 * node-local checkpoint leases on that node alone (`among`), and a sandbox whose server
 * listened again while code ran (neverReuse: a memory restore, a save given up) is never
 * parked on its node for the workspace's next session. The node client is a stand-in
 * recording what it is asked.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { GatewayMetrics } from "../../../../src/metering/gateway-metrics.js";
import type { NodeClient } from "../../../../src/roles/edge/node-client.js";
import type { NodeDirectory } from "../../../../src/roles/edge/node-directory.js";
import { RoutedPools } from "../../../../src/roles/edge/routed-pools.js";
import type { NodeView } from "../../../../src/roles/shared/node-registry.js";
import type { PoolSpec } from "../../../../src/runtime/sandbox-runtime.js";
import type { SandboxRecord } from "../../../../src/store/coordination/records.js";

const IMAGE = "sandpool/sandbox:dev";
const pool = {
  name: "default",
  image: IMAGE,
  coldStartTimeoutMs: 1_000,
  minIdle: 0,
  maxTotal: 4,
} as PoolSpec;

function node(id: string, freeWarm: number): NodeView {
  return {
    id,
    url: `http://${id}:8091`,
    capacity: { default: 4 },
    images: [IMAGE],
    freeWarm: { default: freeWarm },
    leased: 0,
    state: "ready",
    draining: false,
    heartbeatAt: 0,
  };
}

function setUp() {
  const asked: string[] = [];
  const nodes = [node("a", 3), node("b", 1)];
  const client = {
    nodeJson: async (nodeId: string, forward: { path: string }) => {
      asked.push(`${nodeId} ${forward.path}`);
      return forward.path === "/node/v1/leases"
        ? {
            status: 201,
            body: {
              record: {
                sandboxId: "ab12",
                pool: "default",
                endpoint: "http://x",
                runtimeId: "0:c",
                innerSessionId: "i",
                createdAt: 0,
              },
              warm: true,
            },
          }
        : { status: 200, body: { parked: true } };
    },
  } as unknown as NodeClient;
  const directory = {
    list: () => nodes,
    get: (id: string) => nodes.find((candidate) => candidate.id === id),
    noteLease: () => {},
  } as unknown as NodeDirectory;
  const pools = new RoutedPools({
    pools: [pool],
    nodes: client,
    directory,
    metrics: new GatewayMetrics(),
    log: pino({ level: "silent" }),
  });
  return { pools, asked };
}

describe("RoutedPools for hibernation", () => {
  it("leases only among the nodes a resume allows", async () => {
    const { pools, asked } = setUp();
    const hold = { workspace: "team-a", until: 1, now: 0, reuse: false };
    const leased = await pools.lease(pool, hold, (candidate) => candidate.id === "b");
    expect(leased.record.node).toBe("b");
    expect(asked).toEqual(["b /node/v1/leases"]);
    // Unnarrowed, placement asks the node with the most warm sandboxes first.
    expect((await pools.lease(pool, hold)).record.node).toBe("a");
  });

  it("never parks a sandbox whose server listened again while code ran", async () => {
    const { pools, asked } = setUp();
    const record: SandboxRecord = {
      sandboxId: "ab12",
      pool: "default",
      endpoint: "node:a/ab12/team-a",
      runtimeId: "0:c",
      innerSessionId: "i",
      createdAt: 0,
      node: "a",
    };
    expect(await pools.recycle({ ...record, neverReuse: true }, "team-a")).toBe(false);
    expect(asked).toEqual([]);
    expect(await pools.recycle(record, "team-a")).toBe(true);
    expect(asked).toEqual(["a /node/v1/sandboxes/ab12/recycle"]);
  });
});
