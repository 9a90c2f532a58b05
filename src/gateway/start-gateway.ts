/**
 * Builds the gateway's services once, from the configuration and the backends the mode
 * chose (dev: memory store, PGlite, in-process jobs, process runtime; serve: Redis,
 * Postgres, BullMQ, Docker), wires the background jobs and starts the HTTP listener.
 *
 * Each step is a file of its own: policies, pools, usage, hibernation, the session layer,
 * jobs, the parts the handlers take, listen, and shutdown (close-gateway.ts).
 */

import type { Logger } from "pino";
import { Admission } from "../admission/admission.js";
import { buildAuthentication } from "../auth/build-authenticator.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import type { ConsoleAssets } from "../console/console-assets.js";
import type { RunningServer } from "../http/common/listen.js";
import { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { ReconcileReport } from "../pool/reconcile.js";
import { SecretsCache } from "../secrets/secrets-cache.js";
import { SessionLifecycle } from "../session/session-lifecycle.js";
import type { PolicyRepository } from "../store/sql/policy-repository.js";
import { UsageDailyRepository } from "../store/sql/usage-daily-repository.js";
import { assembleParts } from "./assemble-parts.js";
import { buildHibernation } from "./build-hibernation.js";
import { closeGateway } from "./close-gateway.js";
import type { GatewayBackends } from "./gateway-backends.js";
import type { GatewayParts } from "./gateway-parts.js";
import { listenGateway } from "./listen-gateway.js";
import { registerGatewayJobs } from "./register-jobs.js";
import { startEgressGrants } from "./start-egress-grants.js";
import { startPolicies } from "./start-policies.js";
import { startPools } from "./start-pools.js";
import { startSecrets } from "./start-secrets.js";
import { startUsage } from "./start-usage.js";

export type { GatewayBackends };

export interface RunningGateway extends RunningServer {
  /** The gateway's parts, each built once (its owner reads them: tests, dev mode). */
  services: GatewayParts;
  policyRepository: PolicyRepository;
  /** The admin API's own listener, when `adminListener` is configured (else it is on this one). */
  admin?: RunningServer;
  /** Compares the runtime with the store now, or as of `asOf` (it also runs on a schedule). */
  reconcile(asOf?: number): Promise<ReconcileReport>;
  /** Stops serving; `destroySandboxes` also ends every session (dev: nobody else will). */
  close(options?: { destroySandboxes?: boolean }): Promise<void>;
}

export interface StartGatewayOptions {
  /** Extra readiness condition (serve: Redis answers). */
  ready?: () => Promise<boolean>;
  /**
   * The console's files, where they are not beside the running code: an in-process gateway
   * run from src/ (the console's browser test's edge) serves the build's (dist/console-assets).
   */
  consoleAssets?: ConsoleAssets;
}

export async function startGateway(
  config: GatewayConfig,
  backends: GatewayBackends,
  log: Logger,
  options: StartGatewayOptions = {},
): Promise<RunningGateway> {
  const { store, jobs } = backends;
  const metrics = new GatewayMetrics();
  const { policyRepository, policies, policyAdmin } = await startPolicies(config, backends);
  const secretStore = startSecrets(config, backends, {
    policies,
    changed: (workspace) => secrets.forget(workspace),
    log,
  });
  const admission = new Admission(store);
  const started = await startPools(config, backends, { metrics, log });
  const usage = startUsage(config, backends, { metrics, log });
  // The workspaces' secrets, opened for seconds at most: grants and CreateSession read them
  // here (other replicas see a change within the cache's lifetime; this one at once).
  const secrets = new SecretsCache(backends.secrets ?? secretStore);
  startEgressGrants(backends, { policies, secrets, metrics, usage: usage.usage });
  const hibernation = buildHibernation(config, backends, {
    started,
    policies,
    metrics,
    usage: usage.usage,
    log,
    sessions: () => sessions,
  });
  const sessions: SessionLifecycle = new SessionLifecycle({
    store,
    pools: started.pools,
    admission,
    policies,
    jobs,
    sandboxes: started.sandboxes,
    metrics,
    usage: usage.usage,
    log,
    ...(hibernation ? { hibernation } : {}),
    ...(backends.usageJournal ? { journal: backends.usageJournal } : {}),
  });
  started.edge?.bindSessions(sessions);
  await started.edge?.start();

  const usageDaily = new UsageDailyRepository(backends.db);
  const reconcile = registerGatewayJobs(config, backends, {
    started,
    sessions,
    hibernation,
    admission,
    policies,
    usage: usage.usage,
    usageRepository: usage.usageRepository,
    usageDaily,
    metrics,
    log,
  });
  // Before serving: whatever a crashed predecessor left behind is cleaned up first.
  if (!started.edge) await reconcile();

  // JWTs, workspace API keys (revocations announced on the store) and, if configured, introspection.
  // Only a node runs without auth (the loader lets it), and a node runs no gateway.
  if (!config.auth) throw new Error("the gateway needs auth: how bearer tokens are verified");
  const authentication = await buildAuthentication(config.auth, { db: backends.db, store, log });

  let accepting = false;
  const services = assembleParts(config, backends, {
    log,
    metrics,
    authentication,
    policies,
    policyAdmin,
    secretStore,
    admission,
    started,
    sessions,
    secrets,
    usage,
    usageDaily,
    ready: async () => accepting && usage.backlogWithinBound() && ((await options.ready?.()) ?? true),
  });
  const listeners = await listenGateway(config, services, options.consoleAssets);
  await jobs.start();
  accepting = true;

  return {
    ...listeners.server,
    services,
    policyRepository,
    admin: listeners.admin,
    reconcile,
    close: async (closeOptions = {}) => {
      accepting = false;
      await closeGateway(
        backends,
        {
          listeners,
          started,
          sessions,
          usage: usage.usage,
          stopUsageDrain: usage.stopDrain,
          pending: services.pending,
          authentication,
          metrics,
        },
        closeOptions,
      );
    },
  };
}
