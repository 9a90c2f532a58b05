/** The shapes of the node operations (`GET /nodes`, `POST /nodes/{id}/drain|undrain`). */
import { z } from "zod";
import { isolationLevels } from "../../policy-schema/isolation-levels.js";
import { pathParams } from "./admin-params.js";

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

export const nodesResultSchema = z.object({ items: z.array(nodeViewSchema) });
export const nodeParams = pathParams("id", "The node's id.");
