import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { renderNodes } from "../../../../src/cli/commands/nodes-command.js";
import { loadGatewayConfig } from "../../../../src/config/load-config.js";
import { NodeDirectory } from "../../../../src/roles/edge/node-directory.js";
import { placementOrder } from "../../../../src/roles/edge/placement.js";
import { poolShare } from "../../../../src/roles/node/pool-share.js";
import type { NodeRegistry, NodeView } from "../../../../src/roles/shared/node-registry.js";

const IMAGE = "sandpool/sandbox:dev";
const pool = { name: "default", image: IMAGE };

function node(id: string, extra: Partial<NodeView> = {}): NodeView {
  return {
    id,
    url: `http://${id}:8091`,
    capacity: { default: 4 },
    images: [IMAGE],
    freeWarm: { default: 0 },
    leased: 0,
    state: "ready",
    draining: false,
    heartbeatAt: 0,
    ...extra,
  };
}

describe("placementOrder", () => {
  it("puts the node with the most free warm sandboxes first, then cold starts by load", () => {
    const order = placementOrder(
      [
        node("a", { freeWarm: { default: 1 } }),
        node("b", { freeWarm: { default: 3 } }),
        node("c", { leased: 3 }),
        node("d", { leased: 1 }),
      ],
      pool,
    );
    expect(order.map((n) => n.id)).toEqual(["b", "a", "d", "c"]);
  });

  it("places a gvisor pool's sessions only on nodes whose engine offers gvisor, warm or cold", () => {
    const gvisorPool = { ...pool, isolation: "gvisor" as const };
    const nodes = [
      node("old", { freeWarm: { default: 2 } }),
      node("plain", { freeWarm: { default: 2 }, isolation: ["container"] }),
      node("gv-warm", { freeWarm: { default: 1 }, isolation: ["container", "gvisor"] }),
      node("gv-cold", { isolation: ["container", "gvisor"] }),
    ];
    expect(placementOrder(nodes, gvisorPool).map((n) => n.id)).toEqual(["gv-warm", "gv-cold"]);
    // A container pool goes anywhere, a node older than the advert's isolation included.
    expect(placementOrder(nodes, pool).map((n) => n.id)).toEqual(["old", "plain", "gv-warm", "gv-cold"]);
  });

  it("never places on a draining or lost node, nor cold-starts where the image is missing", () => {
    const order = placementOrder(
      [
        node("drained", { state: "draining", draining: true, freeWarm: { default: 5 } }),
        node("lost", { state: "lost", freeWarm: { default: 5 } }),
        node("no-image", { images: [] }),
        node("no-pool", { capacity: {} }),
        node("ok"),
      ],
      pool,
    );
    expect(order.map((n) => n.id)).toEqual(["ok"]);
  });
});

describe("poolShare", () => {
  it("spreads minIdle and maxTotal over the ready nodes, adding up exactly", () => {
    const shares = [0, 1, 2].map((rank) => poolShare({ minIdle: 5, maxTotal: 20 }, 3, rank));
    expect(shares).toEqual([
      { min: 2, max: 7 },
      { min: 2, max: 7 },
      { min: 1, max: 6 },
    ]);
    expect(poolShare({ minIdle: 2, maxTotal: 8 }, 1, 0)).toEqual({ min: 2, max: 8 });
  });

  it("lets every node start one sandbox even when the pool is smaller than the node count", () => {
    expect(poolShare({ minIdle: 0, maxTotal: 2 }, 3, 2)).toEqual({ min: 0, max: 1 });
  });
});

describe("renderNodes", () => {
  it("shows each node's state, leased count, warm over capacity per pool and heartbeat age", () => {
    const text = renderNodes(
      [node("a", { freeWarm: { default: 2 }, leased: 1, heartbeatAt: 10_000 })],
      13_000,
    );
    expect(text).toMatch(/^NODE\s+STATE\s+URL\s+ISOLATION\s+LEASED\s+WARM\/CAPACITY\s+HEARTBEAT/);
    expect(text).toMatch(/a\s+ready\s+http:\/\/a:8091\s+container\s+1\s+default 2\/4\s+3s ago/);
    expect(renderNodes([node("b", { isolation: ["container", "gvisor"] })], 0)).toMatch(
      /b\s+ready\s+http:\/\/b:8091\s+container,gvisor\s+0/,
    );
    expect(renderNodes([])).toMatch(/^no nodes/);
  });
});

describe("node settings", () => {
  const env = { SANDPOOL_JWT_SECRET: "x".repeat(40), SANDPOOL_DEFAULT_IMAGE: IMAGE };
  it("refuses a loss timeout shorter than two heartbeats", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "sandpool-node-settings-"));
    try {
      const file = path.join(dir, "config.yaml");
      writeFileSync(file, "node:\n  heartbeatMs: 2000\n  lostAfterMs: 3000\n");
      expect(() => loadGatewayConfig({ file, env })).toThrow(/node\.lostAfterMs.*at least twice heartbeatMs/);
      writeFileSync(file, "node:\n  heartbeatMs: 500\n  lostAfterMs: 3000\n");
      expect(loadGatewayConfig({ file, env }).node).toMatchObject({ heartbeatMs: 500, lostAfterMs: 3000 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("NodeDirectory.noteLease", () => {
  it("counts this edge's leases against its view until the next read, so placements spread", async () => {
    const listed = [node("a", { freeWarm: { default: 2 } }), node("b", { freeWarm: { default: 2 } })];
    const registry = { list: async () => structuredClone(listed), claimLost: async () => false };
    const directory = new NodeDirectory(registry as unknown as NodeRegistry, {
      refreshMs: 60_000,
      log: pino({ level: "silent" }),
      onLost: async () => {},
    });
    await directory.refresh();
    const first = placementOrder(directory.list(), pool)[0]!;
    directory.noteLease(first.id, "default", true);
    const second = placementOrder(directory.list(), pool)[0]!;
    expect(new Set([first.id, second.id])).toEqual(new Set(["a", "b"]));
    expect(directory.get(first.id)).toMatchObject({ freeWarm: { default: 1 }, leased: 1 });
    await directory.refresh();
    expect(directory.get(first.id)).toMatchObject({ freeWarm: { default: 2 }, leased: 0 });
  });
});
