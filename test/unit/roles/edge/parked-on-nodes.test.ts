import { describe, expect, it } from "vitest";
import { PARKED_IDLE_MS } from "../../../../src/pool/sandbox-reuse.js";
import { ParkedOnNodes, preferNode } from "../../../../src/roles/edge/parked-on-nodes.js";
import type { NodeView } from "../../../../src/roles/shared/node-registry.js";

const view = (id: string) => ({ id }) as NodeView;

describe("ParkedOnNodes", () => {
  it("remembers the node that parked a workspace's sandbox most recently, per pool", () => {
    const parked = new ParkedOnNodes();
    expect(parked.nodeFor("ws", "default")).toBeUndefined();
    parked.parked("ws", "default", "a");
    parked.parked("ws", "default", "b");
    expect(parked.nodeFor("ws", "default")).toBe("b");
    expect(parked.nodeFor("ws", "gv")).toBeUndefined();
    expect(parked.nodeFor("other", "default")).toBeUndefined();
  });

  it("forgets a node once its leases took every sandbox parked there, or found none", () => {
    const parked = new ParkedOnNodes();
    parked.parked("ws", "default", "a");
    parked.parked("ws", "default", "a");
    parked.leased("ws", "default", "a", true);
    expect(parked.nodeFor("ws", "default")).toBe("a");
    // A lease elsewhere says nothing of node a.
    parked.leased("ws", "default", "b", false);
    expect(parked.nodeFor("ws", "default")).toBe("a");
    parked.leased("ws", "default", "a", true);
    expect(parked.nodeFor("ws", "default")).toBeUndefined();
    parked.parked("ws", "default", "a");
    parked.leased("ws", "default", "a", false);
    expect(parked.nodeFor("ws", "default")).toBeUndefined();
  });

  it("forgets what the node has expired, and stays within its bound", () => {
    let now = 0;
    const parked = new ParkedOnNodes(() => now, 3);
    parked.parked("ws", "default", "a");
    now = PARKED_IDLE_MS;
    expect(parked.nodeFor("ws", "default")).toBeUndefined();
    for (const workspace of ["w1", "w2", "w3", "w4"]) parked.parked(workspace, "default", "a");
    expect(parked.size).toBe(3);
    expect(parked.nodeFor("w1", "default")).toBeUndefined();
    expect(parked.nodeFor("w4", "default")).toBe("a");
  });
});

describe("preferNode", () => {
  it("puts the preferred node first when placement would ask it at all", () => {
    const order = [view("a"), view("b"), view("c")];
    expect(preferNode(order, "c").map((node) => node.id)).toEqual(["c", "a", "b"]);
    expect(preferNode(order, "a").map((node) => node.id)).toEqual(["a", "b", "c"]);
    expect(preferNode(order, "gone").map((node) => node.id)).toEqual(["a", "b", "c"]);
    expect(preferNode(order, undefined)).toBe(order);
  });
});
