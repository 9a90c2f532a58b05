/**
 * One node's share of a pool: `minIdle` and `maxTotal` are per pool across the deployment,
 * spread over the ready nodes. The remainder goes to the first nodes by rank (their order
 * by id), so the shares add up to the pool's sizes exactly.
 */
import type { PoolSpec } from "../../runtime/sandbox-runtime.js";

export function poolShare(
  pool: Pick<PoolSpec, "minIdle" | "maxTotal">,
  readyNodes: number,
  rank: number,
): { min: number; max: number } {
  const nodes = Math.max(1, readyNodes);
  const part = (total: number) => Math.floor(total / nodes) + (rank < total % nodes ? 1 : 0);
  // Every node may start at least one sandbox: a pool of 2 over 3 nodes still serves on each.
  return { min: part(pool.minIdle), max: Math.max(1, part(pool.maxTotal)) };
}
