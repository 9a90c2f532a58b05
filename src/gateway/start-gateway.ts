/**
 * Builds the gateway's services once, from the configuration and the backends the mode
 * chose (dev: memory store, PGlite, in-process jobs, process runtime; serve: Redis,
 * Postgres, BullMQ, Docker), wires the background jobs and starts the HTTP listener.
 */
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import { Admission } from "../admission/admission.js";
import { CPU_METER_JOB, CpuMeter } from "../admission/cpu-meter.js";
import { buildAuthentication } from "../auth/build-authenticator.js";
import { FailedAuthLimiter } from "../auth/failed-auth-limiter.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import { PendingWork } from "../deferred/pending-work.js";
import type { GatewayEgress } from "../egress/gateway-egress.js";
import { SandboxClient } from "../forward/sandbox-client.js";
import { SandboxForwarder } from "../forward/sandbox-forwarder.js";
import { FsCheckpointStore } from "../hibernate/fs-checkpoint-store.js";
import { hibernationBounds } from "../hibernate/hibernation-bounds.js";
import type { HibernationSandboxes } from "../hibernate/hibernation-sandboxes.js";
import { LocalHibernationSandboxes } from "../hibernate/local-hibernation-sandboxes.js";
import { SessionHibernation } from "../hibernate/session-hibernation.js";
import { listen, type RunningServer } from "../http/common/listen.js";
import { createGatewayApp } from "../http/gateway-app.js";
import type { JobRunner } from "../jobs/job-runner.js";
import { BufferedUsageSink } from "../metering/buffered-usage-sink.js";
import { DurableUsageSink } from "../metering/durable-usage-sink.js";
import { GatewayMetrics } from "../metering/gateway-metrics.js";
import { registerUsageBacklogMetrics } from "../metering/usage-backlog-metrics.js";
import { startUsageDrain } from "../metering/usage-drain-loop.js";
import { UsageDrainer } from "../metering/usage-drainer.js";
import type { UsageJournal } from "../metering/usage-journal.js";
import { UsageReports } from "../metering/usage-report.js";
import { runRetention, USAGE_RETENTION_JOB } from "../metering/usage-retention.js";
import { POLICY_CHANNEL, PolicyAdmin } from "../policy/policy-admin.js";
import { PolicyService } from "../policy/policy-service.js";
import { PoolDemandSync } from "../pool/pool-demand-sync.js";
import { PoolManager } from "../pool/pool-manager.js";
import { RuntimePoolSizes } from "../pool/pool-sizes.js";
import { poolStatus } from "../pool/pool-status.js";
import { NOTHING_RECONCILED, type ReconcileReport, reconcile } from "../pool/reconcile.js";
import type { GatewayPools } from "../pool/sandbox-pool.js";
import { defaultWarmupStarts, WarmupLimiter } from "../pool/warmup-limiter.js";
import { hibernateDrainingSessions } from "../roles/edge/drain-hibernation.js";
import { createEdgeRouting } from "../roles/edge/edge-routing.js";
import { NodeHibernationSandboxes } from "../roles/edge/node-hibernation-sandboxes.js";
import type { NodeRegistry } from "../roles/shared/node-registry.js";
import { hibernationOf } from "../runtime/sandbox-hibernation.js";
import type { SandboxRuntime } from "../runtime/sandbox-runtime.js";
import { metricsTokenOf } from "../service/metrics-token.js";
import {
  DESTROY_SANDBOX_JOB,
  type EndedSession,
  SETTLE_ENDED_SESSION_JOB,
  SessionLifecycle,
} from "../session/session-lifecycle.js";
import type { CoordinationStore } from "../store/coordination/coordination-store.js";
import type { SandboxRecord } from "../store/coordination/records.js";
import { AdminAuditRepository } from "../store/sql/admin-audit-repository.js";
import { AuditRepository } from "../store/sql/audit-repository.js";
import type { Database } from "../store/sql/database-types.js";
import { PolicyRepository } from "../store/sql/policy-repository.js";
import { PoolSizeRepository } from "../store/sql/pool-size-repository.js";
import { UsageDailyRepository } from "../store/sql/usage-daily-repository.js";
import { UsageRepository } from "../store/sql/usage-repository.js";
import { gatewayOperations } from "./gateway-operations.js";
import type { GatewayParts } from "./gateway-parts.js";

export interface GatewayBackends {
  store: CoordinationStore;
  /** Role edge: the node registry; sessions are placed on nodes and their calls routed there. */
  nodes?: NodeRegistry;
  db: Kysely<Database>;
  /** This host's sandbox runtime: required unless the gateway is an edge (`nodes`), which starts none. */
  runtime?: SandboxRuntime;
  jobs: JobRunner;
  /** The egress proxy the runtime attaches to egress sandboxes; bound here to the policy. */
  egress?: GatewayEgress;
  /** Where usage records are journaled before answers are released (`sandpool serve`). */
  usageJournal?: UsageJournal;
}

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
}

export async function startGateway(
  config: GatewayConfig,
  backends: GatewayBackends,
  log: Logger,
  options: StartGatewayOptions = {},
): Promise<RunningGateway> {
  const { store, db, runtime, jobs } = backends;
  const metrics = new GatewayMetrics();
  const policyRepository = new PolicyRepository(db);
  const policies = new PolicyService(config.policy, policyRepository, config.policyCacheTtlMs);
  await store.subscribe(POLICY_CHANNEL, (workspace) => policies.invalidate(workspace || undefined));
  backends.egress?.bind({
    leases: () => store.listLeases(),
    policyFor: (workspace) => policies.forWorkspace(workspace),
  });
  const admission = new Admission(store);
  const edge = backends.nodes
    ? createEdgeRouting(config, { registry: backends.nodes, store, metrics, log })
    : undefined;
  const sandboxes = edge?.client ?? new SandboxClient();
  const poolSizes = new RuntimePoolSizes(config.pools, new PoolSizeRepository(db), store, log);
  if (!edge && !runtime) throw new Error("a gateway that is not an edge needs a sandbox runtime");
  // Where sandboxes run: on nodes (an edge), or on this host's runtime.
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
  // Every replica's lease and start counts, shared without a command on the request path.
  const demandSync = new PoolDemandSync(pools, store, metrics, log);
  await demandSync.start();
  // A resize made here: warm that pool at once rather than on the next tick.
  await poolSizes.start((name) => {
    const pool = pools.list().find((candidate) => candidate.name === name);
    if (pool) pools.warm(pool).catch((error) => log.error({ err: error }, "warm-up failed"));
  });
  const usageRepository = new UsageRepository(db);
  // Billing usage goes with the store's own writes to its backlog, drained to Postgres by
  // every replica; refusals are buffered here (src/metering/durable-usage-sink.ts).
  const usageDrainer = new UsageDrainer(store, usageRepository, log);
  const journal = backends.usageJournal;
  const usage = new DurableUsageSink(
    store,
    usageDrainer,
    new BufferedUsageSink(usageRepository, log),
    log,
    Date.now,
    journal,
  );
  journal?.start();
  registerUsageBacklogMetrics(metrics.registry, () => usageDrainer.lastReport);
  const usageDrain = startUsageDrain(usageDrainer, config.usageBacklog.drainMs, log);
  const backlogWithinBound = () => usageDrainer.lastReport.records <= config.usageBacklog.notReadyAbove;
  // Hibernation where the sandboxes' runtime can checkpoint: this host's (the docker
  // runtime; never the process runtime), or an edge's nodes', each asked for its steps.
  const runtimeHibernation = !edge && runtime ? hibernationOf(runtime) : undefined;
  const hibernationSandboxes: HibernationSandboxes | undefined = edge
    ? new NodeHibernationSandboxes({
        pools: config.pools,
        routed: edge.pools,
        nodes: edge.client,
        directory: edge.directory,
        shared: config.hibernate.shared,
        log,
      })
    : runtimeHibernation && pools instanceof PoolManager
      ? new LocalHibernationSandboxes({
          leases: store,
          pools,
          hibernation: runtimeHibernation,
          checkpoints: FsCheckpointStore.fromSettings(config.hibernate, metrics.hibernationRefusals),
          createInnerSession: (endpoint, timeoutMs) => sandboxes.createInnerSession(endpoint, timeoutMs),
        })
      : undefined;
  const hibernation = hibernationSandboxes
    ? new SessionHibernation({
        leases: store,
        sandboxes: hibernationSandboxes,
        boundsOf: async (workspace) => hibernationBounds(await policies.forWorkspace(workspace)),
        settleSandbox: (lease) => sessions.settleSandbox(lease),
        sandboxLost: async (key) => {
          await sessions.end(key, "sandbox_failed");
        },
        metrics,
        usage,
        log,
      })
    : undefined;
  const sessions: SessionLifecycle = new SessionLifecycle({
    store,
    pools,
    admission,
    policies,
    jobs,
    sandboxes,
    metrics,
    usage,
    log,
    ...(hibernation ? { hibernation } : {}),
    ...(journal ? { journal } : {}),
  });
  edge?.bindSessions(sessions);
  await edge?.start();

  jobs.register<SandboxRecord>(DESTROY_SANDBOX_JOB, (record) => pools.retire(record));
  jobs.register<EndedSession>(SETTLE_ENDED_SESSION_JOB, (ended) => sessions.settleEnded(ended));
  jobs.register("warm-pools", () => pools.warmAll());
  jobs.register("reap-sessions", async () => {
    await sessions.reap();
    await sessions.hibernateIdle();
    // A drain moves sessions when every node reads the same checkpoints (docs/operating.md).
    if (edge && hibernation && config.hibernate.shared) {
      await hibernateDrainingSessions({ directory: edge.directory, leases: store, hibernation, log });
    }
  });
  const cpuMeter = new CpuMeter({
    store,
    admission,
    policies,
    usageOf: (sandbox) => pools.usageOf(sandbox),
    end: (key, reason) => sessions.end(key, reason),
    log,
    observe: (tick) => metrics.cpuMeteredSeconds.inc(tick.chargedMs / 1000),
  });
  jobs.register(CPU_METER_JOB, async () => {
    await cpuMeter.tick();
  });
  const reconcileWithRuntime = async (asOf?: number): Promise<ReconcileReport> => {
    // An edge has no engine to reconcile: each node reconciles its own.
    if (!runtime || edge) return NOTHING_RECONCILED;
    const strayCheckpoints = await hibernation?.reconcileCheckpoints().catch((error: unknown) => {
      log.warn({ err: error }, "could not reconcile the checkpoint store");
      return 0;
    });
    if (strayCheckpoints) log.info({ removed: strayCheckpoints }, "removed checkpoints no session names");
    return reconcile({
      now: asOf === undefined ? undefined : () => asOf,
      runtime,
      store,
      pools,
      sessions,
      log,
      orphanGraceMs: config.intervals.orphanGraceMs,
      recoverLease: (sandboxId) => usageRepository.openSessionOnSandbox(sandboxId),
    });
  };
  const reconcileNow = () => reconcileWithRuntime().then(() => undefined);
  // An edge has no engine to reconcile (each node reconciles its own) and warms nothing.
  jobs.register("reconcile", edge ? async () => {} : reconcileNow);
  if (!edge) jobs.schedule("warm-pools", config.intervals.warmMs);
  jobs.schedule("reap-sessions", config.intervals.reapMs);
  jobs.schedule(CPU_METER_JOB, config.intervals.cpuMeterMs);
  if (!edge) jobs.schedule("reconcile", config.intervals.reconcileMs);
  const usageDaily = new UsageDailyRepository(db);
  jobs.register(USAGE_RETENTION_JOB, async () => {
    await usage.flush();
    await runRetention(usageDaily, config.retention, new Date(), log);
  });
  jobs.schedule(USAGE_RETENTION_JOB, config.retention.intervalMs);
  // Before serving: whatever a crashed predecessor left behind is cleaned up first.
  if (!edge) await reconcileNow();

  const policyAdmin = new PolicyAdmin(
    config.policy,
    [...new Set(config.pools.map((pool) => pool.resourceClass))],
    policyRepository,
    store,
  );

  // JWTs, workspace API keys (revocations announced on the store) and, if configured, introspection.
  // Only a node runs without auth (the loader lets it), and a node runs no gateway.
  if (!config.auth) throw new Error("the gateway needs auth: how bearer tokens are verified");
  const authentication = await buildAuthentication(config.auth, { db, store, log });

  let accepting = false;
  const services: GatewayParts = {
    log,
    metrics,
    authenticator: authentication.authenticator,
    apiKeyAdmin: authentication.apiKeyAdmin,
    authLimiter: new FailedAuthLimiter(config.authFailures),
    policies,
    admission,
    pools,
    sessions,
    forwarder: new SandboxForwarder({
      client: sandboxes,
      limits: config.limits,
      log,
      onSessionFailed: (key) => sessions.end(key, "sandbox_failed"),
    }),
    usage,
    limits: config.limits,
    pending: new PendingWork(),
    metricsToken: metricsTokenOf(config.metrics),
    ready: async () => accepting && backlogWithinBound() && ((await options.ready?.()) ?? true),
    policyAdmin,
    usageSummary: async (workspace, from, to) => {
      // This replica's buffered events first, so what an operator just did shows up.
      await usage.flush();
      return usageRepository.summary(workspace, from, to);
    },
    usageReports: new UsageReports(usageDaily, () => usage.flush()),
    poolStatus: async () => {
      // This replica's counts first, so what an operator just did shows up.
      await demandSync.syncNow().catch((error) => log.warn({ err: error }, "could not share pool counts"));
      return poolStatus(pools, poolSizes, store);
    },
    poolSizes,
    nodes: backends.nodes,
    adminAudit: new AdminAuditRepository(db),
    audit: new AuditRepository(db),
  };
  const separateAdmin = config.adminListener !== undefined;
  // Built once, served by the public app and, when it has its own listener, the admin API's.
  const app = { ...services, operations: gatewayOperations(services) };
  const publicApp = createGatewayApp(app, {
    basePath: config.basePath,
    http: config.http,
    adminApi: separateAdmin ? "elsewhere" : "here",
  });
  const server = await listen(publicApp, {
    host: config.host,
    port: config.port,
    headersTimeoutMs: config.limits.headerReadTimeoutMs,
    bodyReadTimeoutMs: config.limits.bodyReadTimeoutMs,
    writeStallTimeoutMs: config.limits.writeStallTimeoutMs,
    requestTimeoutMs:
      (config.policy.execTimeoutCeilingSeconds + 60) * 1000 + config.limits.execDeadlineBufferMs,
  });
  let admin: RunningServer | undefined;
  if (config.adminListener) {
    try {
      admin = await listen(createGatewayApp(app, { http: config.http, adminApi: "only" }), {
        host: config.adminListener.host,
        port: config.adminListener.port,
        headersTimeoutMs: config.limits.headerReadTimeoutMs,
        bodyReadTimeoutMs: config.limits.bodyReadTimeoutMs,
        writeStallTimeoutMs: config.limits.writeStallTimeoutMs,
      });
    } catch (error) {
      await server.close();
      throw error;
    }
  }
  await jobs.start();
  accepting = true;

  return {
    ...server,
    services,
    policyRepository,
    admin,
    reconcile: reconcileWithRuntime,
    close: async (options = {}) => {
      accepting = false;
      const closing = Promise.all([server.close(), admin?.close()]);
      if (options.destroySandboxes) {
        sessions.stopReuse();
        for (const lease of await store.listLeases()) {
          await sessions.end({ workspace: lease.workspace, sessionId: lease.sessionId }, "drained");
        }
        for (const pool of pools.list()) {
          for (const idle of await store.listIdle(pool.name)) {
            if (await store.takeIdle(pool.name, idle.sandboxId))
              await jobs.enqueue(DESTROY_SANDBOX_JOB, idle);
          }
          for (const parked of await store.listParked(pool.name)) {
            if (await store.takeParked(pool.name, parked.sandboxId))
              await jobs.enqueue(DESTROY_SANDBOX_JOB, parked);
          }
        }
      }
      await jobs.close();
      edge?.stop();
      poolSizes.stop();
      await demandSync.stop();
      await closing;
      // Settlements of calls already answered: before the usage sink and the store close.
      await services.pending.drained();
      // Egress sandboxes left to other replicas: their reconciliation takes the sockets over.
      await backends.egress?.closeAll();
      usageDrain.stop();
      await usage.close();
      await journal?.close();
      await authentication.close();
      await sandboxes.close();
      metrics.close();
    },
  };
}
