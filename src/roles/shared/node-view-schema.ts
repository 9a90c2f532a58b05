/**
 * A node as the edges see it: what it advertises on each heartbeat (its id and URL, its share
 * of each pool, its images and isolation levels, its free warm sandboxes and leases) and what
 * the registry adds (state, draining, last heartbeat). Declared once, as the admin API's
 * schema (`GET /admin/v1/nodes`); the registry's types are taken from it.
 */
import { z } from "zod";
import { isolationLevels } from "../../policy-schema/isolation-levels.js";

export const nodeViewSchema = z.object({
  id: z.string(),
  url: z.string(),
  capacity: z.record(z.string(), z.number()).meta({ description: "The most sandboxes it runs, per pool." }),
  images: z.array(z.string()),
  isolation: z
    .array(z.enum(isolationLevels))
    .optional()
    .meta({ description: "Isolation levels its engine offers (absent: container alone)." }),
  freeWarm: z
    .record(z.string(), z.number())
    .meta({ description: "Warm sandboxes it can lease now, per pool." }),
  leased: z.number().int(),
  state: z.enum(["ready", "draining", "lost"]),
  draining: z.boolean(),
  heartbeatAt: z.number().meta({ description: "Epoch milliseconds of its last heartbeat." }),
});
