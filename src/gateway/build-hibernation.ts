/**
 * Start-up step "hibernation": where the sandboxes' runtime can checkpoint, sessions can be
 * hibernated. That is this host's runtime when it can (the docker runtime; never the process
 * runtime), or an edge's nodes, each asked for its steps. Elsewhere there is none.
 */
import type { Logger } from "pino";
import type { GatewayConfig } from "../config/gateway-config.js";
import { FsCheckpointStore } from "../hibernate/fs-checkpoint-store.js";
import { hibernationBounds } from "../hibernate/hibernation-bounds.js";
import type { HibernationSandboxes } from "../hibernate/hibernation-sandboxes.js";
import { LocalHibernationSandboxes } from "../hibernate/local-hibernation-sandboxes.js";
import { SessionHibernation } from "../hibernate/session-hibernation.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { UsageSink } from "../metering/usage-sink.js";
import type { PolicyService } from "../policy/policy-service.js";
import { PoolManager } from "../pool/pool-manager.js";
import { NodeHibernationSandboxes } from "../roles/edge/node-hibernation-sandboxes.js";
import { checkpointsOf } from "../runtime/sandbox-checkpoints.js";
import type { SessionLifecycle } from "../session/session-lifecycle.js";
import type { GatewayBackends } from "./gateway-backends.js";
import type { StartedPools } from "./start-pools.js";

export function buildHibernation(
  config: GatewayConfig,
  backends: Pick<GatewayBackends, "store" | "runtime">,
  deps: {
    started: StartedPools;
    policies: PolicyService;
    metrics: GatewayMetrics;
    usage: UsageSink;
    log: Logger;
    /** The session layer, built after this (it takes the hibernation): read when a session is settled or lost. */
    sessions: () => SessionLifecycle;
  },
): SessionHibernation | undefined {
  const { store, runtime } = backends;
  const { edge, pools, sandboxes } = deps.started;
  const runtimeHibernation = !edge && runtime ? checkpointsOf(runtime) : undefined;
  const hibernationSandboxes: HibernationSandboxes | undefined = edge
    ? new NodeHibernationSandboxes({
        pools: config.pools,
        routed: edge.pools,
        nodes: edge.client,
        directory: edge.directory,
        shared: config.hibernate.shared,
        log: deps.log,
      })
    : runtimeHibernation && pools instanceof PoolManager
      ? new LocalHibernationSandboxes({
          leases: store,
          pools,
          hibernation: runtimeHibernation,
          checkpoints: FsCheckpointStore.fromSettings(config.hibernate, deps.metrics.hibernationRefusals),
          createInnerSession: (endpoint, timeoutMs) => sandboxes.createInnerSession(endpoint, timeoutMs),
        })
      : undefined;
  if (!hibernationSandboxes) return undefined;
  return new SessionHibernation({
    leases: store,
    sandboxes: hibernationSandboxes,
    boundsOf: async (workspace) => hibernationBounds(await deps.policies.forWorkspace(workspace)),
    settleSandbox: (lease) => deps.sessions().settlement.settleSandbox(lease),
    sandboxLost: async (key) => {
      await deps.sessions().end(key, "sandbox_failed");
    },
    metrics: deps.metrics,
    usage: deps.usage,
    log: deps.log,
  });
}
