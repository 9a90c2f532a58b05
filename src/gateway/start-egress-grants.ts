/**
 * Start-up step "egress grants": the egress proxy bound to the sessions it serves. A
 * sandbox's grant is its lease's (found through the store: the holder by key, all leases
 * only to find a new holder), under its workspace's policy in force, with the workspace's
 * secrets opened through a cache of a few seconds (src/secrets/secrets-cache.ts). The
 * proxy's events become a metric (a secret used) and audit rows (a request refused, merged
 * per workspace and second by the refusal buffer, so a sandbox hammering a refused host
 * writes a row a second, not a row a request).
 */
import type { EgressHolder } from "../egress/gateway-egress.js";
import { egressSecretUsesCounter } from "../metering/egress-secret-metrics.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { UsageSink } from "../metering/usage-sink.js";
import type { PolicyService } from "../policy/policy-service.js";
import type { SecretsCache } from "../secrets/secrets-cache.js";
import type { GatewayBackends } from "./gateway-backends.js";

/** The audit row's operation for a refused egress request (`GET /admin/v1/audit?kind=denied`). */
export const EGRESS_OPERATION = "egress.connect";
/** Its code: what the proxy answered (403), in the `policy.` family audit keeps. */
export const EGRESS_REFUSED_CODE = "policy.egress_not_allowed";

export function startEgressGrants(
  backends: Pick<GatewayBackends, "store" | "egress">,
  deps: {
    policies: Pick<PolicyService, "forWorkspace">;
    secrets: SecretsCache;
    metrics: GatewayMetrics;
    usage: UsageSink;
  },
): void {
  const { egress, store } = backends;
  if (!egress) return;
  const uses = egressSecretUsesCounter(deps.metrics.registry);
  egress.bind(
    {
      leases: () => store.listLeases(),
      lease: (key) => store.getLease(key),
      policyFor: (workspace) => deps.policies.forWorkspace(workspace),
      secretsOf: (workspace) => deps.secrets.openedSecretsOf(workspace),
    },
    {
      credentialUsed: (holder: EgressHolder, secret, host) =>
        uses.inc({ workspace: holder.workspace, secret, host }),
      refused: (holder: EgressHolder, host, reason) =>
        deps.usage.record({
          workspace: holder.workspace,
          sessionId: holder.sessionId,
          kind: "denied",
          detail: { operation: EGRESS_OPERATION, code: EGRESS_REFUSED_CODE, status: 403, host, reason },
        }),
    },
  );
}
