/**
 * Start-up step "parts": the gateway's parts as the handlers and the transport take them
 * (gateway-parts.ts), from what the earlier steps built.
 */
import type { Logger } from "pino";
import type { Admission } from "../admission/admission.js";
import type { ApiKeyAdmin } from "../auth/api-key-admin.js";
import { FailedAuthLimiter } from "../auth/failed-auth-limiter.js";
import type { BearerAuthenticator } from "../auth/principal.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import { PendingWork } from "../deferred/pending-work.js";
import { SandboxForwarder } from "../forward/sandbox-forwarder.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import { UsageReports } from "../metering/usage-report.js";
import type { PolicyAdmin } from "../policy/policy-admin.js";
import type { PolicyService } from "../policy/policy-service.js";
import { poolStatus } from "../pool/pool-status.js";
import type { SecretStore } from "../secrets/secret-store.js";
import type { SecretsCache } from "../secrets/secrets-cache.js";
import { metricsTokenOf } from "../service-operations/metrics-token.js";
import type { SessionLifecycle } from "../session/session-lifecycle.js";
import { AdminAuditRepository } from "../store/sql/admin-audit-repository.js";
import { AuditRepository } from "../store/sql/audit-repository.js";
import type { UsageDailyRepository } from "../store/sql/usage-daily-repository.js";
import type { GatewayBackends } from "./gateway-backends.js";
import type { GatewayParts } from "./gateway-parts.js";
import type { StartedPools } from "./start-pools.js";
import type { StartedUsage } from "./start-usage.js";

export function assembleParts(
  config: GatewayConfig,
  backends: Pick<GatewayBackends, "store" | "db" | "nodes">,
  built: {
    log: Logger;
    metrics: GatewayMetrics;
    authentication: { authenticator: BearerAuthenticator; apiKeyAdmin: ApiKeyAdmin };
    policies: PolicyService;
    policyAdmin: PolicyAdmin;
    secretStore: SecretStore;
    admission: Admission;
    started: StartedPools;
    sessions: SessionLifecycle;
    secrets: SecretsCache;
    usage: StartedUsage;
    usageDaily: UsageDailyRepository;
    ready: GatewayParts["ready"];
  },
): GatewayParts {
  const { store, db } = backends;
  const { log, started, sessions } = built;
  const { usage, usageRepository } = built.usage;
  return {
    log,
    metrics: built.metrics,
    authenticator: built.authentication.authenticator,
    apiKeyAdmin: built.authentication.apiKeyAdmin,
    secretStore: built.secretStore,
    secrets: built.secretStore,
    authLimiter: new FailedAuthLimiter(config.authFailures),
    policies: built.policies,
    admission: built.admission,
    pools: started.pools,
    sessions,
    secretNames: (workspace) => built.secrets.namesOf(workspace),
    // Explain reads names and bindings; the values stay behind.
    secretBindings: async (workspace) =>
      (await built.secrets.openedSecretsOf(workspace)).map(({ name, binding }) => ({ name, binding })),
    egressSettings: { allowPorts: config.egress.allowPorts },
    forwarder: new SandboxForwarder({
      client: started.sandboxes,
      limits: config.limits,
      log,
      onSessionFailed: (key) => sessions.end(key, "sandbox_failed"),
    }),
    usage,
    limits: config.limits,
    pending: new PendingWork(),
    metricsToken: metricsTokenOf(config.metrics),
    ready: built.ready,
    policyAdmin: built.policyAdmin,
    usageSummary: async (workspace, from, to) => {
      // This replica's buffered events first, so what an operator just did shows up.
      await usage.flush();
      return usageRepository.summary(workspace, from, to);
    },
    usageReports: new UsageReports(built.usageDaily, () => usage.flush()),
    poolStatus: async () => {
      // This replica's counts first, so what an operator just did shows up.
      await started.demandSync
        .syncNow()
        .catch((error) => log.warn({ err: error }, "could not share pool counts"));
      return poolStatus(started.pools, started.poolSizes, store);
    },
    poolSizes: started.poolSizes,
    nodes: backends.nodes,
    adminAudit: new AdminAuditRepository(db),
    audit: new AuditRepository(db),
  };
}
