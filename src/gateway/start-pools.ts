/**
 * Start-up step "pools": where sandboxes run (on nodes, for an edge; else on this host's
 * runtime, through a PoolManager), the pools' sizes as changed at run time, and every
 * replica's lease and start counts, shared without a command on the request path.
 */
import type { Logger } from "pino";
import type { GatewayConfig } from "../config/gateway-config.js";
import { SandboxClient } from "../forward/sandbox-client.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import { PoolDemandSync } from "../pool/pool-demand-sync.js";
import { PoolManager } from "../pool/pool-manager.js";
import { RuntimePoolSizes } from "../pool/pool-sizes.js";
import type { GatewayPools } from "../pool/sandbox-pool.js";
import { defaultWarmupStarts, WarmupLimiter } from "../pool/warmup-limiter.js";
import { createEdgeRouting, type EdgeRouting } from "../roles/edge/edge-routing.js";
import type { NodeClient } from "../roles/edge/node-client.js";
import { PoolSizeRepository } from "../store/sql/pool-size-repository.js";
import type { GatewayBackends } from "./gateway-backends.js";

export interface StartedPools {
  /** Role edge: the routing to nodes. Absent on one host. */
  edge?: EdgeRouting;
  /** How calls reach a sandbox: through its node (an edge), or straight to it. */
  sandboxes: SandboxClient | NodeClient;
  pools: GatewayPools;
  poolSizes: RuntimePoolSizes;
  demandSync: PoolDemandSync;
}

export async function startPools(
  config: GatewayConfig,
  backends: Pick<GatewayBackends, "store" | "nodes" | "db" | "runtime">,
  deps: { metrics: GatewayMetrics; log: Logger },
): Promise<StartedPools> {
  const { store, runtime } = backends;
  const { metrics, log } = deps;
  const edge = backends.nodes
    ? createEdgeRouting(config, { registry: backends.nodes, store, metrics, log })
    : undefined;
  const sandboxes = edge?.client ?? new SandboxClient();
  const poolSizes = new RuntimePoolSizes(config.pools, new PoolSizeRepository(backends.db), store, log);
  if (!edge && !runtime) throw new Error("a gateway that is not an edge needs a sandbox runtime");
  const pools: GatewayPools = edge
    ? edge.pools
    : new PoolManager({
        pools: config.pools,
        store,
        runtime: runtime!,
        client: sandboxes,
        metrics,
        log,
        sizes: poolSizes,
        warmupLimiter: new WarmupLimiter(config.limits.maxWarmupStarts ?? defaultWarmupStarts()),
      });
  const demandSync = new PoolDemandSync(pools, store, metrics, log);
  await demandSync.start();
  // A resize made here: warm that pool at once rather than on the next tick.
  await poolSizes.start((name) => {
    const pool = pools.list().find((candidate) => candidate.name === name);
    if (pool) pools.warm(pool).catch((error) => log.error({ err: error }, "warm-up failed"));
  });
  return { ...(edge ? { edge } : {}), sandboxes, pools, poolSizes, demandSync };
}
