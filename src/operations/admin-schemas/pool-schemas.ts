/**
 * The shapes of the pool operations (`GET /pools`, `PATCH /pools/{name}`). A resize's body is
 * the schema RuntimePoolSizes validates with (src/pool/pool-sizes.ts), imported.
 */
import { z } from "zod";
import { isolationLevels } from "../../policy-schema/isolation-levels.js";
import { pathParams } from "./admin-params.js";

export { poolResizeSchema } from "../../pool/pool-sizes.js";

const sizes = { minIdle: z.number().int(), maxTotal: z.number().int() };

/** A pool as operators see it (src/pool/pool-status.ts). */
export const poolStatusSchema = z.object({
  name: z.string(),
  image: z.string(),
  resourceClass: z.string(),
  ...sizes,
  warmupConcurrency: z.number().int(),
  coldStartTimeoutMs: z.number().int(),
  egress: z.boolean().optional(),
  demand: z.boolean().optional(),
  // Answered since pools took an isolation level; the document did not say so (the admin
  // answers' check against it found this).
  isolation: z.enum(isolationLevels).optional(),
  configured: z
    .object(sizes)
    .meta({ description: "The configuration's sizes (minIdle, maxTotal are those in force)." }),
  override: z
    .object({
      pool: z.string(),
      minIdle: z.number().int().nullable(),
      maxTotal: z.number().int().nullable(),
      updatedAt: z.string(),
      updatedBy: z.string(),
    })
    .nullable()
    .meta({ description: "The run-time resize in force (null sizes: as configured), or null." }),
  effectiveMinIdle: z.number().int(),
  leaseDemand: z.object({
    leasesPerSecond: z.number(),
    burstReserve: z.number().int().meta({
      description:
        "The most leases within one refill time in the last ten minutes: kept warm for the next burst.",
    }),
    refillSecondsP95: z.number().nullable(),
  }),
  engineStarts: z
    .object({ startsPerSecond: z.number().nullable(), quickestStartMs: z.number().nullable() })
    .meta({
      description:
        "The engine's start throughput as the answering replica measured it (null before a few starts): warm-up keeps no more starts in flight than it absorbs.",
    }),
  idle: z.number().int(),
  parked: z.number().int().meta({
    description: "Sandboxes that served a session, scrubbed, waiting for their workspace's next one.",
  }),
  leased: z.number().int(),
  starting: z.number().int(),
  members: z.number().int(),
  warmLeases: z.number().int(),
  coldLeases: z.number().int(),
  warmupFailures: z.number().int(),
  warmHitRate: z.number().nullable(),
  thisReplica: z.object({
    warmLeases: z.number().int(),
    coldLeases: z.number().int(),
    warmupFailures: z.number().int(),
    reusedLeases: z.number().int().meta({
      description: "Leases of a parked sandbox: counted in neither warmLeases nor the demand for fresh ones.",
    }),
  }),
  lastStartError: z
    .object({
      message: z.string(),
      at: z.string(),
      nextAttemptAt: z.string(),
      consecutiveFailures: z.number().int(),
    })
    .nullable(),
});

const answerMinuteSchema = z.object({
  start: z.string().meta({ description: "The minute's start." }),
  calls: z.number().int().meta({ description: "Contract calls answered in that minute." }),
  serverErrors: z.number().int().meta({
    description:
      "Of those, 5xx answers: server.internal, the 503s (capacity.exhausted, store.unavailable, session.resume_failed...) and the sandbox failures.",
  }),
  sandboxErrors: z.number().int().meta({
    description:
      "Of those, sandbox failures: 502 sandbox.unreachable or sandbox.bad_answer, 504 sandbox.timeout.",
  }),
});

export const poolsResultSchema = z.object({
  items: z.array(poolStatusSchema),
  serverErrors: z
    .object({
      scope: z.literal("replica"),
      minutes: z.array(answerMinuteSchema),
    })
    .meta({
      description:
        "The contract calls the answering replica served per minute over the last hour (60 whole minutes and the one under way, oldest first) and its server errors among them. One replica's view, kept in memory: behind a load balancer each replica answers with its own; the deployment's is sandpool_http_requests_total in Prometheus.",
    }),
});
export const poolParams = pathParams("name", "The pool's name.");
