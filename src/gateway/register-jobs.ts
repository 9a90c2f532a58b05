/**
 * Start-up step "jobs": the background work of a gateway, registered and scheduled on the
 * job runner (BullMQ in serve, in-process timers in dev): destroying sandboxes, settling
 * ended sessions, warming the pools, reaping and hibernating sessions, metering CPU,
 * reconciling the runtime with the store, and usage retention. An edge warms and reconciles
 * nothing: each node does that for its own engine.
 */
import type { Logger } from "pino";
import type { Admission } from "../admission/admission.js";
import { CPU_METER_JOB, CpuMeter } from "../admission/cpu-meter.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import type { SessionHibernation } from "../hibernate/session-hibernation.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import { runRetention, USAGE_RETENTION_JOB } from "../metering/usage-retention.js";
import type { UsageSink } from "../metering/usage-sink.js";
import type { PolicyService } from "../policy/policy-service.js";
import { NOTHING_RECONCILED, type ReconcileReport, reconcile } from "../pool/reconcile.js";
import { hibernateDrainingSessions } from "../roles/edge/drain-hibernation.js";
import {
  DESTROY_SANDBOX_JOB,
  type EndedSession,
  SETTLE_ENDED_SESSION_JOB,
} from "../session/sandbox-settlement.js";
import type { SessionLifecycle } from "../session/session-lifecycle.js";
import type { SandboxRecord } from "../store/coordination/records.js";
import type { UsageDailyRepository } from "../store/sql/usage-daily-repository.js";
import type { UsageRepository } from "../store/sql/usage-repository.js";
import type { GatewayBackends } from "./gateway-backends.js";
import type { StartedPools } from "./start-pools.js";

/** Compares the runtime with the store now, or as of `asOf`. */
export type ReconcileWithRuntime = (asOf?: number) => Promise<ReconcileReport>;

export function registerGatewayJobs(
  config: GatewayConfig,
  backends: Pick<GatewayBackends, "store" | "runtime" | "jobs">,
  deps: {
    started: StartedPools;
    sessions: SessionLifecycle;
    hibernation: SessionHibernation | undefined;
    admission: Admission;
    policies: PolicyService;
    usage: UsageSink;
    usageRepository: UsageRepository;
    usageDaily: UsageDailyRepository;
    metrics: GatewayMetrics;
    log: Logger;
  },
): ReconcileWithRuntime {
  const { store, runtime, jobs } = backends;
  const { edge, pools } = deps.started;
  const { sessions, hibernation, usage, log } = deps;
  jobs.register<SandboxRecord>(DESTROY_SANDBOX_JOB, (record) => pools.retire(record));
  jobs.register<EndedSession>(SETTLE_ENDED_SESSION_JOB, (ended) => sessions.settlement.settleEnded(ended));
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
    admission: deps.admission,
    policies: deps.policies,
    usageOf: (sandbox) => pools.usageOf(sandbox),
    end: (key, reason) => sessions.end(key, reason),
    log,
    observe: (tick) => deps.metrics.cpuMeteredSeconds.inc(tick.chargedMs / 1000),
  });
  jobs.register(CPU_METER_JOB, async () => {
    await cpuMeter.tick();
  });
  const reconcileWithRuntime: ReconcileWithRuntime = async (asOf) => {
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
      recoverLease: (sandboxId) => deps.usageRepository.openSessionOnSandbox(sandboxId),
    });
  };
  const reconcileNow = () => reconcileWithRuntime().then(() => undefined);
  // An edge has no engine to reconcile (each node reconciles its own) and warms nothing.
  jobs.register("reconcile", edge ? async () => {} : reconcileNow);
  if (!edge) jobs.schedule("warm-pools", config.intervals.warmMs);
  jobs.schedule("reap-sessions", config.intervals.reapMs);
  jobs.schedule(CPU_METER_JOB, config.intervals.cpuMeterMs);
  if (!edge) jobs.schedule("reconcile", config.intervals.reconcileMs);
  jobs.register(USAGE_RETENTION_JOB, async () => {
    await usage.flush();
    await runRetention(deps.usageDaily, config.retention, new Date(), log);
  });
  jobs.schedule(USAGE_RETENTION_JOB, config.retention.intervalMs);
  return reconcileWithRuntime;
}
