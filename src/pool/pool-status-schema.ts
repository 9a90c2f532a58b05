/**
 * The shape of a pool's status (pool-status.ts): declared once, as the admin API's schema,
 * and the TypeScript type taken from it, so the answer and its document cannot drift.
 */
import { z } from "zod";
import { isolationLevels } from "../policy-schema/isolation-levels.js";

const sizes = { minIdle: z.number().int(), maxTotal: z.number().int() };

/** A pool as operators see it: the answer of `GET /admin/v1/pools`, and PoolStatus's type. */
export const poolStatusSchema = z.object({
  name: z.string(),
  image: z.string(),
  resourceClass: z.string(),
  ...sizes,
  warmupConcurrency: z.number().int(),
  coldStartTimeoutMs: z.number().int(),
  startQueueTimeoutMs: z
    .number()
    .int()
    .optional()
    .meta({ description: "How long a lease waits its turn to start a sandbox in a burst before a 503." }),
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
