import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { SandboxClient } from "../../../src/forward/sandbox-client.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import { PoolManager } from "../../../src/pool/pool-manager.js";
import type { PoolSpec, SandboxRuntime } from "../../../src/runtime/sandbox-runtime.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";

const spec = (name: string, egress: boolean, image = "img"): PoolSpec => ({
  name,
  image,
  resourceClass: "standard",
  minIdle: 0,
  maxTotal: 1,
  warmupConcurrency: 1,
  coldStartTimeoutMs: 1_000,
  egress,
});

function manager(pools: PoolSpec[]): PoolManager {
  return new PoolManager({
    pools,
    store: new MemoryCoordinationStore(),
    runtime: {} as SandboxRuntime,
    client: {} as SandboxClient,
    metrics: new GatewayMetrics({ processMetrics: false }),
    log: pino({ level: "silent" }),
  });
}

describe("PoolManager.find: egress is a permission, never a default", () => {
  const both = manager([spec("egress", true), spec("isolated", false)]);

  it("gives a workspace without egress the isolated pool", () => {
    expect(both.find("img", "standard", false)?.name).toBe("isolated");
  });

  it("gives a workspace allowed egress the egress pool", () => {
    expect(both.find("img", "standard", true)?.name).toBe("egress");
  });

  it("falls back to the isolated pool when no egress pool exists", () => {
    expect(manager([spec("isolated", false)]).find("img", "standard", true)?.name).toBe("isolated");
  });

  it("never hands an egress pool to a workspace without egress", () => {
    expect(manager([spec("egress", true)]).find("img", "standard", false)).toBeUndefined();
  });

  it("matches image and resource class", () => {
    expect(both.find("other", "standard", false)).toBeUndefined();
    expect(both.find("img", "large", false)).toBeUndefined();
  });
});
