/**
 * The gateway's Prometheus metrics, on a registry of its own (never prom-client's global
 * one, so two gateways in one test process do not collide).
 */

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { AnswerMinutes } from "./answer-minutes.js";
import { type EventLoopDelay, recordEventLoopDelay } from "./event-loop-delay.js";

export type PoolState = "idle" | "leased" | "starting";

/**
 * Hibernations a checkpoint store refused, by reason (src/hibernate/checkpoint-room.ts): a
 * workspace's own bound, or the store's byte cap or free-disk floor. Counted where the store
 * is: the gateway on one host, each node with roles edge and node (FsCheckpointStore.fromSettings
 * starts every reason at 0, so an alert on a rate sees the series before the first refusal).
 */
export function hibernationRefusalsCounter(registry: Registry): Counter<"reason"> {
  return new Counter({
    name: "sandpool_hibernation_refusals_total",
    help: "Hibernations refused by the checkpoint store, by reason (workspace_sessions, workspace_bytes, store_bytes, disk_free); the session kept running",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
}

export class GatewayMetrics {
  readonly registry = new Registry();

  readonly requests = new Counter({
    name: "sandpool_http_requests_total",
    help: "HTTP requests answered, by route, method and status",
    labelNames: ["route", "method", "status"] as const,
    registers: [this.registry],
  });

  readonly requestDuration = new Histogram({
    name: "sandpool_http_request_duration_seconds",
    help: "Time to answer an HTTP request, by route",
    labelNames: ["route"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });

  readonly leaseDuration = new Histogram({
    name: "sandpool_lease_duration_seconds",
    help: "Time to lease a sandbox for a new session: warm (from the pool) or cold (started on demand)",
    labelNames: ["pool", "start"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  readonly poolSandboxes = new Gauge({
    name: "sandpool_pool_sandboxes",
    help: "Sandboxes per pool and state",
    labelNames: ["pool", "state"] as const,
    registers: [this.registry],
  });

  readonly warmupFailures = new Counter({
    name: "sandpool_warmup_failures_total",
    help: "Sandbox starts that failed, by pool",
    labelNames: ["pool"] as const,
    registers: [this.registry],
  });

  /** The deployment's warm leases / all leases (every replica's, src/pool/pool-demand-sync.ts). */
  readonly poolWarmHitRatio = new Gauge({
    name: "sandpool_pool_warm_hit_ratio",
    help: "Share of the deployment's leases served from the warm pool, by pool (all replicas, since the counts began)",
    labelNames: ["pool"] as const,
    registers: [this.registry],
  });

  readonly poolEffectiveMinIdle = new Gauge({
    name: "sandpool_pool_effective_min_idle",
    help: "Idle sandboxes warm-up keeps: minIdle raised by demand (lease rate x p95 refill time), up to maxTotal",
    labelNames: ["pool"] as const,
    registers: [this.registry],
  });

  readonly poolLeaseRate = new Gauge({
    name: "sandpool_pool_lease_rate",
    help: "The deployment's leases per second, by pool (an exponentially weighted moving average)",
    labelNames: ["pool"] as const,
    registers: [this.registry],
  });

  readonly rejections = new Counter({
    name: "sandpool_rejections_total",
    help: "Requests refused by policy, quota, capacity or authentication, by error code",
    labelNames: ["code"] as const,
    registers: [this.registry],
  });

  readonly authFailures = new Counter({
    name: "sandpool_auth_failures_total",
    help: "Credentials refused, by reason (src/auth/auth-refusal.ts); never by credential",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });

  readonly execDuration = new Histogram({
    name: "sandpool_exec_duration_seconds",
    help: "Wall time of tool calls as the gateway measures it around the forwarded call, by tool kind",
    labelNames: ["tool"] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600],
    registers: [this.registry],
  });

  /**
   * The store's part of a call's start (Execute and the file calls): resolve the lease,
   * reserve budget and mark the session busy, one round trip at most (none when the
   * replica's lease cache serves the call). Beside the request duration and the sandbox's
   * wall time it splits the gateway's own time per call.
   */
  readonly callBeginDuration = new Histogram({
    name: "sandpool_call_begin_duration_seconds",
    help: "Time to begin a call on its session in the store (resolve, reserve budget, mark busy: one round trip at most, none from the lease cache)",
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });

  readonly sessionsEnded = new Counter({
    name: "sandpool_sessions_ended_total",
    help: "Sessions ended, by reason",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });

  /** Hibernation (src/hibernate/session-hibernation.ts): saves and resumes, how long, how big. */
  readonly hibernations = new Counter({
    name: "sandpool_hibernations_total",
    help: "Sessions hibernated (outcome saved) or whose save failed (outcome failed; the session kept running)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });

  readonly resumes = new Counter({
    name: "sandpool_resumes_total",
    help: "Hibernated sessions resumed (outcome resumed) or whose restore failed (outcome failed; the checkpoint kept)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });

  readonly hibernateDuration = new Histogram({
    name: "sandpool_hibernate_duration_seconds",
    help: "Time to save a session's sandbox to its checkpoint and remove it, by checkpoint kind (memory, files)",
    labelNames: ["kind"] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });

  readonly resumeDuration = new Histogram({
    name: "sandpool_resume_duration_seconds",
    help: "Time to bring a hibernated session's sandbox back from its checkpoint, by checkpoint kind",
    labelNames: ["kind"] as const,
    buckets: [0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly checkpointBytes = new Histogram({
    name: "sandpool_checkpoint_bytes",
    help: "Size of each checkpoint saved, in bytes, by kind",
    labelNames: ["kind"] as const,
    buckets: [1e4, 1e5, 1e6, 1e7, 5e7, 1e8, 2.5e8, 5e8, 1e9, 2e9, 4e9],
    registers: [this.registry],
  });

  /** Refused hibernations, by reason (src/hibernate/checkpoint-room.ts). */
  readonly hibernationRefusals = hibernationRefusalsCounter(this.registry);

  /** The CPU meter's charges (src/admission/cpu-meter.ts): sandbox CPU beyond the calls' wall time shows here. */
  readonly cpuMeteredSeconds = new Counter({
    name: "sandpool_sandbox_cpu_metered_seconds_total",
    help: "CPU time of leased sandboxes read by the CPU meter and charged to their workspaces' days",
    registers: [this.registry],
  });

  private readonly eventLoopDelay: EventLoopDelay = recordEventLoopDelay(this.registry);

  /** Contract calls and their 5xx answers per minute, this replica's last hour (the admin API's pools list). */
  readonly answerMinutes = new AnswerMinutes();

  constructor(options: { processMetrics?: boolean } = {}) {
    if (options.processMetrics ?? true)
      collectDefaultMetrics({ register: this.registry, prefix: "sandpool_" });
  }

  /** Stops sampling the event loop (the gateway has stopped). */
  close(): void {
    this.eventLoopDelay.stop();
  }
}
