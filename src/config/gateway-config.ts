/**
 * The gateway's configuration: one schema for every mode. Unknown keys are errors (a
 * typo must not silently fall back to a default), and cross-field rules are checked here,
 * at start-up: every allowed image needs a pool in the default resource class. Each setting
 * carries its documentation (src/contract/setting-docs.ts); the sections with many settings
 * of their own are schemas of their own files.
 */
import { z } from "zod";
import { authConfigSchema } from "../auth/auth-config.js";
import { consoleSettingsSchema } from "../console/console-settings.js";
import { settingDocs } from "../contract/setting-docs.js";
import { hibernateSettingsSchema } from "../hibernate/hibernate-settings.js";
import { deploymentPolicySchema } from "../policy-schema/deployment-policy.js";
import { nodeSettingsSchema } from "../roles/shared/node-settings.js";
import {
  cleartextEngineIssues,
  dockerRuntimeSettingsSchema,
} from "../runtime/docker/docker-runtime-options.js";
import { secretsSettingsSchema } from "../secrets/secrets-settings.js";
import { metricsSettingsSchema } from "../service-operations/metrics-settings.js";
import { redisSettingsIssues, redisSettingsSchema } from "../store/coordination/redis/redis-config.js";
import { egressSettingsSchema } from "./egress-settings.js";
import {
  intervalsSettingsSchema,
  retentionSettingsSchema,
  usageBacklogSettingsSchema,
} from "./job-settings.js";
import { poolSpecSchema } from "./pool-spec.js";
import {
  adminListenerSettingsSchema,
  authFailuresSettingsSchema,
  httpSettingsSchema,
  limitsSettingsSchema,
} from "./request-settings.js";

const positive = z.number().int().min(1);

export const gatewayConfigSchema = z
  .strictObject({
    host: z
      .string()
      .default("127.0.0.1")
      .register(settingDocs, {
        doc: "Address the gateway listens on (0.0.0.0 for every interface).",
        env: { name: "SANDPOOL_HOST", description: "address to listen on" },
      }),
    port: z
      .number()
      .int()
      .min(0)
      .max(65_535)
      .default(8080)
      .register(settingDocs, {
        doc: "Port the gateway listens on; 0 picks a free one.",
        env: { name: "SANDPOOL_PORT", description: "port to listen on (a whole number)" },
      }),
    adminListener: adminListenerSettingsSchema,
    basePath: z
      .string()
      .default("")
      .register(settingDocs, {
        doc: "The contract is served at / and also under this path, e.g. /v1/sandbox.",
        env: { name: "SANDPOOL_BASE_PATH", description: "also serve the contract under this path" },
      }),
    deployment: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/)
      .default("sandpool")
      .register(settingDocs, {
        doc: "Label of every sandbox this deployment starts, so reconciliation knows its own.",
        env: { name: "SANDPOOL_DEPLOYMENT", description: "label of the sandboxes this deployment owns" },
      }),
    /** Required, except on a node (role node), which verifies no bearer token: edges do. */
    auth: authConfigSchema
      .optional()
      .register(settingDocs, { doc: "How bearer tokens are verified. Configure exactly one key source." }),
    policy: deploymentPolicySchema.register(settingDocs, {
      doc: "Deployment policy: ceilings no workspace can exceed, and what applies without a policy row.",
    }),
    pools: z.array(poolSpecSchema).min(1).register(settingDocs, {
      doc: "Warm pools, one per image and resource class; every allowed image needs one.",
    }),
    limits: limitsSettingsSchema,
    http: httpSettingsSchema,
    intervals: intervalsSettingsSchema,
    authFailures: authFailuresSettingsSchema,
    metrics: metricsSettingsSchema.register(settingDocs, {
      doc: "Who may read /metrics (here and on nodes): anyone who reaches the port, or with a token only Authorization: Bearer <token>.",
    }),
    console: consoleSettingsSchema.register(settingDocs, {
      doc: "The operator console at /console (docs/console.md): static files beside the admin API, used with an admin token.",
    }),
    retention: retentionSettingsSchema,
    usageBacklog: usageBacklogSettingsSchema,
    policyCacheTtlMs: positive.default(1_000).register(settingDocs, {
      doc: "How long a workspace policy is cached; edits also invalidate it at once.",
    }),
    egress: egressSettingsSchema,
    secrets: secretsSettingsSchema.register(settingDocs, {
      doc: "The key ring workspace secrets are sealed with at rest (docs/secrets.md). Without keys the gateway serves, and the secrets API answers 503 secrets.not_configured.",
    }),
    hibernate: hibernateSettingsSchema.register(settingDocs, {
      doc: "Where hibernated sessions' checkpoints are kept (their memory and files): docs/hibernate.md.",
    }),
    databaseUrl: z
      .string()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "Postgres URL for policy, usage and audit; required by sandpool serve (dev mode uses PGlite).",
        example: "postgres://sandpool:change-me@postgres:5432/sandpool",
        env: { name: "DATABASE_URL", description: "Postgres connection URL (required by `sandpool serve`)" },
      }),
    redisUrl: z
      .string()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "Redis URL of one server for coordination and jobs (rediss:// for TLS); sandpool serve needs this or redis.sentinels or redis.cluster (dev mode keeps state in memory).",
        example: "redis://redis:6379",
        env: {
          name: "REDIS_URL",
          description:
            "Redis URL of one server, rediss:// for TLS (serve needs this, or Sentinels, or a Cluster)",
        },
      }),
    redis: redisSettingsSchema.optional().register(settingDocs, {
      doc: "Redis through Sentinel (sentinels, sentinelName) or as a Cluster (cluster.nodes) instead of redisUrl; set one of the three.",
    }),
    runtime: z
      .strictObject({
        kind: z
          .enum(["docker", "process"])
          .default("docker")
          .register(settingDocs, {
            doc: "docker (isolated containers) or process (child processes, dev only, NOT isolated).",
            env: { name: "SANDPOOL_RUNTIME", description: "sandbox runtime: docker or process" },
          }),
        docker: dockerRuntimeSettingsSchema.optional().register(settingDocs, {
          doc: "Options of the docker runtime (engines, socket directory, resource classes).",
        }),
        python: z
          .string()
          .min(1)
          .optional()
          .register(settingDocs, {
            doc: "Python interpreter of the process runtime's sandboxes; unset finds python3.",
            example: "python3",
            env: {
              name: "SANDPOOL_PYTHON",
              description: "Python interpreter of the process runtime's sandboxes",
            },
          }),
      })
      .prefault({})
      .register(settingDocs, { doc: "Where sandboxes run." }),
    /**
     * What this process is: `all` (one host: today's gateway), `edge` (stateless: the
     * contract and admin API, routing each session's calls to its node) or `node` (one per
     * sandbox host: its engine, its share of the warm pools, the node API).
     */
    role: z
      .enum(["all", "edge", "node"])
      .default("all")
      .register(settingDocs, {
        doc: "What this process is. One host runs all (gateway and sandboxes); scaled out, stateless edges route to one node per sandbox host.",
        env: { name: "SANDPOOL_ROLE", description: "what this process is: all (one host), edge or node" },
      }),
    node: nodeSettingsSchema.register(settingDocs, {
      doc: "The node API (role node) and the secrets edges and nodes authenticate each other with.",
    }),
    shutdownGraceMs: z
      .number()
      .int()
      .min(0)
      .default(30_000)
      .register(settingDocs, {
        doc: "On SIGTERM, how long in-flight requests may finish before exit.",
        env: { name: "SANDPOOL_SHUTDOWN_GRACE_MS", description: "grace for in-flight requests on SIGTERM" },
      }),
    migrateOnStart: z
      .boolean()
      .default(false)
      .register(settingDocs, {
        doc: "Apply pending database migrations at start-up instead of via sandpool migrate.",
        env: {
          name: "SANDPOOL_MIGRATE_ON_START",
          description: "apply database migrations at start-up (true/false)",
        },
      }),
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
