/**
 * The shapes of the pool operations (`GET /pools`, `PATCH /pools/{name}`). A resize's body is
 * the schema RuntimePoolSizes validates with (src/pool/pool-sizes.ts), and a pool's status the
 * schema its type is made from (src/pool/pool-status-schema.ts), both imported.
 */
import { z } from "zod";
import { answerMinuteSchema } from "../../metering/answer-minutes.js";
import { poolStatusSchema } from "../../pool/pool-status-schema.js";
import { pathParams } from "./admin-params.js";

export { poolResizeSchema } from "../../pool/pool-sizes.js";
export { poolStatusSchema } from "../../pool/pool-status-schema.js";

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
