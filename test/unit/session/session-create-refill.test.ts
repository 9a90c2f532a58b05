/**
 * SessionLifecycle.create around its parts (they stand in here): the pool's warm-up is
 * asked to refill after a lease that took a fresh sandbox or failed, and not after a lease
 * of the workspace's own parked sandbox, which took nothing warm-up keeps (a workspace's
 * churn on reused sandboxes must not read the pool's counts in Redis at every session).
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import { effectivePolicy } from "../../../src/policy/effective-policy.js";
import type { PoolSpec } from "../../../src/runtime/sandbox-runtime.js";
import { SessionLifecycle, type SessionLifecycleDeps } from "../../../src/session/session-lifecycle.js";
import { deployment } from "../policy/deployment.js";

const POOL: PoolSpec = {
  name: "default",
  image: "img/a",
  resourceClass: "standard",
  minIdle: 1,
  maxTotal: 4,
  warmupConcurrency: 1,
  coldStartTimeoutMs: 10_000,
  egress: true,
};

function lifecycleLeasing(leased: { warm: boolean; reused: boolean } | "refused") {
  const warmed: string[] = [];
  const deps = {
    admission: { admitSession: async () => {}, releaseSession: async () => {} },
    pools: {
      list: () => [POOL],
      leaseBudgetMs: () => 10_000,
      lease: async () => {
        if (leased === "refused") throw new SandpoolError("capacity.exhausted", "at capacity");
        return {
          ...leased,
          record: {
            sandboxId: "sb-1",
            pool: POOL.name,
            endpoint: "unix:/sock",
            runtimeId: "0:c",
            innerSessionId: "inner",
            createdAt: 0,
          },
        };
      },
      holdMembership: async () => {},
      warm: async (pool: PoolSpec) => {
        warmed.push(pool.name);
      },
    },
    store: { putLease: async () => {} },
    usage: { record: () => {} },
    metrics: new GatewayMetrics({ processMetrics: false }),
    log: pino({ level: "silent" }),
  } as unknown as SessionLifecycleDeps;
  return { lifecycle: new SessionLifecycle(deps), warmed };
}

const policy = effectivePolicy("ws", deployment({}), undefined);
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe("SessionLifecycle.create: the refill behind a lease", () => {
  it("asks warm-up to refill after a fresh sandbox was leased", async () => {
    const { lifecycle, warmed } = lifecycleLeasing({ warm: true, reused: false });
    await lifecycle.create("ws", {}, policy);
    await nextTurn();
    expect(warmed).toEqual(["default"]);
  });

  it("asks nothing after a lease of the workspace's parked sandbox", async () => {
    const { lifecycle, warmed } = lifecycleLeasing({ warm: true, reused: true });
    await lifecycle.create("ws", {}, policy);
    await nextTurn();
    expect(warmed).toEqual([]);
  });

  it("asks warm-up to refill after a lease that failed", async () => {
    const { lifecycle, warmed } = lifecycleLeasing("refused");
    await expect(lifecycle.create("ws", {}, policy)).rejects.toThrow("at capacity");
    await nextTurn();
    expect(warmed).toEqual(["default"]);
  });
});
