/**
 * Where a new session goes: the nodes to ask, best first. Nodes with a free warm sandbox of
 * the pool come first, the most free first; then, for a cold start, the least-loaded nodes
 * (leased over capacity) whose engine has the image. Draining and lost nodes take no lease,
 * and neither do nodes whose engine does not offer the pool's isolation (a gvisor pool goes
 * only where runsc is registered).
 */

import type { PoolSpec } from "../../runtime/sandbox-runtime.js";
import type { NodeView } from "../shared/node-registry.js";

export function placementOrder(
  nodes: readonly NodeView[],
  pool: Pick<PoolSpec, "name" | "image" | "isolation">,
): NodeView[] {
  const isolation = pool.isolation ?? "container";
  const ready = nodes.filter(
    (node) =>
      node.state === "ready" &&
      (node.capacity[pool.name] ?? 0) > 0 &&
      (node.isolation ?? ["container"]).includes(isolation),
  );
  const free = (node: NodeView) => node.freeWarm[pool.name] ?? 0;
  const load = (node: NodeView) => node.leased / Math.max(1, node.capacity[pool.name] ?? 1);
  const warm = ready.filter((node) => free(node) > 0).sort((a, b) => free(b) - free(a) || load(a) - load(b));
  const cold = ready
    .filter((node) => free(node) === 0 && node.images.includes(pool.image))
    .sort((a, b) => load(a) - load(b) || a.id.localeCompare(b.id));
  return [...warm, ...cold];
}
