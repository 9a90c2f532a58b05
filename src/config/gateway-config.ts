/**
 * The gateway's configuration: one schema for every mode. Unknown keys are errors (a
 * typo must not silently fall back to a default), and cross-field rules are checked here,
 * at start-up: every allowed image needs a pool in the default resource class.
 */
import { z } from "zod";
import { authConfigSchema } from "../auth/auth-config.js";
import { consoleSettingsSchema } from "../console/console-settings.js";
import { hibernateSettingsSchema } from "../hibernate/hibernate-settings.js";
import { DEFAULT_CALLS_IN_FLIGHT_PER_WORKSPACE } from "../http/middleware/calls-in-flight.js";
import { deploymentPolicySchema } from "../policy-schema/deployment-policy.js";
import { cidrSchema } from "../policy-schema/egress-schemas.js";
import { isolationLevels } from "../policy-schema/isolation-levels.js";
import { nodeSettingsSchema } from "../roles/shared/node-settings.js";
import {
  cleartextEngineIssues,
  dockerRuntimeSettingsSchema,
} from "../runtime/docker/docker-runtime-options.js";
import { secretsSettingsSchema } from "../secrets/secrets-settings.js";
import { metricsSettingsSchema } from "../service-operations/metrics-settings.js";
import { redisSettingsIssues, redisSettingsSchema } from "../store/coordination/redis/redis-config.js";

const positive = z.number().int().min(1);

/** `*`, a host name (`sandpool.example`), a domain and its subdomains (`.example`), or an IP address. */
const hostPattern = z
  .string()
  .regex(/^(\*|\.?[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])$/, "a host name, .domain, an IP address or *");
/** `*`, or an origin as a browser sends it: scheme://host[:port], nothing after it. */
const originPattern = z
  .string()
  .regex(/^(\*|https?:\/\/[A-Za-z0-9_.\-[\]:]+)$/, "an origin (https://host[:port]) or *");

export const poolSpecSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "pool names are lower-case letters, digits, - and _"),
    image: z.string().min(1),
    resourceClass: z.string().min(1).default("standard"),
    minIdle: z.number().int().min(0).default(2),
    maxTotal: positive.default(100),
    warmupConcurrency: positive.default(2),
    coldStartTimeoutMs: positive.default(30_000),
    /** Sandboxes with network egress, for workspaces whose policy allows it (egressAllowed). */
    egress: z.boolean().default(false),
    /**
     * Warm-up keeps more than minIdle ready when the deployment leases faster than it
     * refills (lease rate x p95 refill time, up to maxTotal; src/pool/pool-demand.ts).
     */
    demand: z.boolean().default(true),
    /**
     * The sandboxes' kernel boundary: `container` (the engine's default runtime) or `gvisor`
     * (runtime.docker.gvisorRuntime, a user-space kernel; docs/isolation.md).
     */
    isolation: z.enum(isolationLevels).default("container"),
  })
  .refine((pool) => pool.minIdle <= pool.maxTotal, { message: "minIdle cannot exceed maxTotal" })
  // An egress sandbox connects to the proxy's socket in its host directory, which runsc as
  // registered (--host-uds=create) does not allow: refused rather than failing at every start.
  .refine((pool) => !(pool.egress && pool.isolation === "gvisor"), {
    message: "egress pools cannot run under gVisor yet (docs/isolation.md): use isolation container for it",
  });

export const gatewayConfigSchema = z
  .strictObject({
    host: z.string().default("127.0.0.1"),
    port: z.number().int().min(0).max(65_535).default(8080),
    /**
     * The admin API (`/admin/v1`) on a listener of its own, e.g. loopback or a private
     * interface only; the public listener then answers those paths as unknown routes.
     * Unset: the admin API shares the public listener.
     */
    adminListener: z
      .strictObject({
        host: z.string().min(1).default("127.0.0.1"),
        port: z.number().int().min(0).max(65_535).default(8081),
      })
      .optional(),
    /** The contract is served at `/` and also under this path (e.g. `/v1/sandbox`). */
    basePath: z.string().default(""),
    /** Labels every sandbox this deployment starts, so reconciliation knows its own. */
    deployment: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/)
      .default("sandpool"),
    /** Required, except on a node (role node), which verifies no bearer token: edges do. */
    auth: authConfigSchema.optional(),
    policy: deploymentPolicySchema,
    pools: z.array(poolSpecSchema).min(1),
    limits: z
      .strictObject({
        maxJsonBodyBytes: positive.default(10 * 1024 * 1024),
        execDeadlineBufferMs: positive.default(10_000),
        sandboxRequestTimeoutMs: positive.default(30_000),
        /** A request's whole header block must arrive within this. */
        headerReadTimeoutMs: positive.default(10_000),
        /** A request body that stays silent this long (while the gateway wants bytes) is cut off. */
        bodyReadTimeoutMs: positive.default(30_000),
        /** Requests in flight that have not passed authentication; more get 503 (health checks never). */
        maxUnauthenticatedRequests: positive.default(256),
        /** Contract calls of one workspace in flight at once on one replica; more get 429. */
        maxCallsInFlightPerWorkspace: positive.default(DEFAULT_CALLS_IN_FLIGHT_PER_WORKSPACE),
        /** A client that stops reading its answer this long is cut off (its buffered answer freed). */
        writeStallTimeoutMs: positive.default(30_000),
        /**
         * A sandbox's successful answer read into memory (Execute, PutFile): 1 MiB of stdout
         * and of stderr fit even fully JSON-escaped. An Execute answer over it becomes a 200
         * whose result says the output was dropped. Downloads stream and are not capped here.
         */
        maxSandboxAnswerBytes: positive.default(16 * 1024 * 1024),
        /** A sandbox's error answer read into memory; a larger one is `sandbox.bad_answer` (502). */
        maxSandboxErrorBytes: positive.default(64 * 1024),
        /** Sandbox answers being read into memory at once, all calls together; more wait their turn. */
        maxBufferedAnswerBytes: positive.default(128 * 1024 * 1024),
        /**
         * Warm-up sandbox starts in flight at once on one replica, all pools together (on top
         * of each pool's warmupConcurrency). Unset: the machine's CPU count.
         */
        maxWarmupStarts: positive.optional(),
      })
      .prefault({}),
    /** Which Host and Origin headers the gateway answers (DNS rebinding, browser pages). */
    http: z
      .strictObject({
        allowedHosts: z.array(hostPattern).default([]),
        allowedOrigins: z.array(originPattern).default([]),
      })
      .prefault({}),
    intervals: z
      .strictObject({
        warmMs: positive.default(1_000),
        reapMs: positive.default(1_000),
        reconcileMs: positive.default(30_000),
        /** How often leased sandboxes' CPU is read and charged (src/admission/cpu-meter.ts). */
        cpuMeterMs: positive.default(2_000),
        /** Longer than any sandbox start takes, so a start in progress is never called an orphan. */
        orphanGraceMs: positive.default(120_000),
      })
      .prefault({}),
    authFailures: z
      .strictObject({ maxFailures: positive.default(20), windowMs: positive.default(60_000) })
      .prefault({}),
    /** Who may read /metrics: anyone who reaches the port, or only with `metrics.token`. */
    metrics: metricsSettingsSchema,
    /** The operator console at /console (docs/console.md). */
    console: consoleSettingsSchema,
    /**
     * How long raw usage events and audit rows are kept. Raw events are rolled up per UTC day
     * (usage_daily, kept for good) before they are pruned; audit rows are simply deleted.
     */
    retention: z
      .strictObject({
        usageEventsDays: positive.default(35),
        auditDays: positive.default(400),
        /** How often the rollup and pruning job runs (once across replicas). */
        intervalMs: positive.default(3_600_000),
      })
      .prefault({}),
    /**
     * The usage backlog: billing records kept in the coordination store until the drainer
     * has written them to Postgres (src/metering/usage-drainer.ts).
     */
    usageBacklog: z
      .strictObject({
        /** How often each replica drains the backlog to Postgres. */
        drainMs: positive.default(1_000),
        /** Past this many records waiting, /readyz answers not ready (Postgres is not keeping up). */
        notReadyAbove: positive.default(1_000_000),
        /**
         * Where `sandpool serve` journals each call's usage record before its answer is
         * released (src/metering/usage-journal.ts); default: under the OS temp directory, per
         * deployment. Must outlive the process (a volume, e.g. an emptyDir).
         */
        journalDir: z.string().min(1).optional(),
        /** A journal segment nobody has written to for this long is replayed by any replica. */
        journalReplayAfterMs: positive.default(30_000),
      })
      .prefault({}),
    policyCacheTtlMs: positive.default(1_000),
    /**
     * The filtering proxy egress pools reach the network through (src/egress): what no
     * workspace's grant can open, and its bounds per sandbox.
     */
    egress: z
      .strictObject({
        denyCidrs: z.array(cidrSchema).default([]),
        allowPorts: z.array(z.number().int().min(1).max(65_535)).default([]),
        maxTunnelsPerSandbox: positive.default(64),
        connectTimeoutMs: positive.default(10_000),
        idleTimeoutMs: positive.default(300_000),
        /**
         * The CA the proxy signs leaf certificates with for hosts a credential is bound to
         * (src/egress/tls): both files, or neither (then one is made and kept in Postgres).
         */
        caCertFile: z.string().min(1).optional(),
        caKeyFile: z.string().min(1).optional(),
        /** Extra CAs (PEM files) the proxy trusts for upstream servers, besides Node's roots. */
        upstreamCaFiles: z.array(z.string().min(1)).default([]),
      })
      .refine((egress) => (egress.caCertFile === undefined) === (egress.caKeyFile === undefined), {
        message: "egress.caCertFile and egress.caKeyFile go together: set both, or neither",
      })
      .prefault({}),
    /** The key ring workspace secrets are sealed with at rest (docs/secrets.md). */
    secrets: secretsSettingsSchema,
    /** Where hibernated sessions' checkpoints are kept (node-local, or shared by every node). */
    hibernate: hibernateSettingsSchema,
    /** Postgres for policy, usage and audit; `sandpool serve` requires it, dev mode uses PGlite. */
    databaseUrl: z.string().min(1).optional(),
    /** Redis for coordination and jobs; `sandpool serve` requires it, dev mode keeps state in memory. */
    redisUrl: z.string().min(1).optional(),
    /** Redis through Sentinel or as a Cluster, instead of redisUrl's one server. */
    redis: redisSettingsSchema.optional(),
    runtime: z
      .strictObject({
        kind: z.enum(["docker", "process"]).default("docker"),
        /** Options of the docker runtime (engines, networks, resource classes). */
        docker: dockerRuntimeSettingsSchema.optional(),
        /** Python interpreter of the process runtime's sandboxes. */
        python: z.string().min(1).optional(),
      })
      .prefault({}),
    /**
     * What this process is: `all` (one host: today's gateway), `edge` (stateless: the
     * contract and admin API, routing each session's calls to its node) or `node` (one per
     * sandbox host: its engine, its share of the warm pools, the node API).
     */
    role: z.enum(["all", "edge", "node"]).default("all"),
    /** The node API (role node) and the edge/node shared secrets (roles edge and node). */
    node: nodeSettingsSchema,
    /** On SIGTERM, how long in-flight requests may finish before the process exits anyway. */
    shutdownGraceMs: z.number().int().min(0).default(30_000),
    /** Apply pending database migrations at start-up instead of via `sandpool migrate`. */
    migrateOnStart: z.boolean().default(false),
  })
  .superRefine((config, ctx) => {
    if (config.auth === undefined && config.role !== "node")
      ctx.addIssue({
        code: "custom",
        message:
          "required: how bearer tokens are verified (one key source: jwtSecret, jwtPublicKey or jwksUrl)",
        path: ["auth"],
      });
    const names = new Set<string>();
    for (const pool of config.pools) {
      if (names.has(pool.name))
        ctx.addIssue({ code: "custom", message: `pool '${pool.name}' is defined twice`, path: ["pools"] });
      names.add(pool.name);
    }
    for (const issue of redisSettingsIssues(config.redisUrl, config.redis))
      ctx.addIssue({ code: "custom", ...issue });
    if (config.runtime.kind === "docker" && config.runtime.docker) {
      for (const issue of cleartextEngineIssues(config.runtime.docker))
        ctx.addIssue({ ...issue, path: ["runtime", "docker", ...issue.path] });
    }
    const admin = config.adminListener;
    if (admin && admin.port !== 0 && admin.port === config.port) {
      ctx.addIssue({
        code: "custom",
        message: `must differ from port (${config.port}): the admin API gets a listener of its own`,
        path: ["adminListener", "port"],
      });
    }
    // A start in progress is known by its pool membership, which lasts the start's deadline
    // plus 5 s: a shorter grace would let another replica destroy a sandbox being started.
    const longestStart = Math.max(...config.pools.map((pool) => pool.coldStartTimeoutMs));
    if (config.intervals.orphanGraceMs <= longestStart + 5_000) {
      ctx.addIssue({
        code: "custom",
        message: `must be longer than the longest coldStartTimeoutMs plus 5 s (${longestStart + 5_000} ms)`,
        path: ["intervals", "orphanGraceMs"],
      });
    }
    // With policy.isolation gvisor, only gvisor pools serve anyone (src/policy/decide-pool.ts).
    const gvisorOnly = config.policy.isolation === "gvisor";
    for (const image of config.policy.allowedImages) {
      const served = config.pools.some(
        (p) =>
          p.image === image &&
          p.resourceClass === config.policy.resourceClass &&
          !p.egress &&
          (!gvisorOnly || p.isolation === "gvisor"),
      );
      if (!served) {
        ctx.addIssue({
          code: "custom",
          message: `allowed image '${image}' has no ${gvisorOnly ? "gvisor " : ""}pool (without egress) in resource class '${config.policy.resourceClass}'`,
          path: ["pools"],
        });
      }
    }
  });

export type GatewayConfigInput = z.input<typeof gatewayConfigSchema>;
export type GatewayConfig = z.output<typeof gatewayConfigSchema>;
