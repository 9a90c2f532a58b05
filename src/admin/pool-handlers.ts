/**
 * Pools in the admin API: what each pool holds right now, and its sizes changed at run time.
 * A resize is validated (404 unknown pool; 422 listing every problem: not whole numbers, out
 * of 0..1000, minIdle above maxTotal once applied), persisted, audited, and in force on every
 * replica within a second (src/pool/pool-sizes.ts). A null size goes back to the configured
 * value. Shrinking never ends a session: a pool above its new maxTotal starts nothing until
 * sessions end. The list carries the answering replica's contract calls and server errors per
 * minute over the last hour (src/metering/answer-minutes.ts), for the console's overview.
 */

import { SandpoolError } from "../contract/error-codes.js";
import type { AnswerMinutes } from "../metering/answer-minutes.js";
import { adminOperations } from "../operations/admin-operations.js";
import type { OperationHandlers } from "../operations/handler.js";
import { handlersFor } from "../operations/typed-handlers.js";
import type { RuntimePoolSizes } from "../pool/pool-sizes.js";
import type { PoolStatus } from "../pool/pool-status.js";
import { actorOf, answer } from "./admin-call.js";

export interface PoolDeps {
  /** Every pool's spec, sizes in force and counts from the coordination store. */
  poolStatus: () => Promise<PoolStatus[]>;
  /** Pool sizes changed at run time. */
  poolSizes: Pick<RuntimePoolSizes, "resize">;
  metrics: { answerMinutes: Pick<AnswerMinutes, "lastHour"> };
}

export function poolHandlers({ poolStatus, poolSizes, metrics }: PoolDeps): OperationHandlers {
  return handlersFor(adminOperations, {
    "admin.pools.list": async () =>
      answer({
        items: await poolStatus(),
        serverErrors: { scope: "replica", minutes: metrics.answerMinutes.lastHour() },
      }),

    "admin.pools.resize": async ({ args, caller, log }) => {
      const name = args.params.name;
      const actor = actorOf(caller);
      await poolSizes.resize(name, args.body, actor);
      const status = (await poolStatus()).find((pool) => pool.name === name);
      log.info({ pool: name, actor, minIdle: status?.minIdle, maxTotal: status?.maxTotal }, "pool resized");
      // The resize refused an unknown pool; one gone since (a configuration reload) is as unknown.
      if (!status) throw new SandpoolError("request.not_found", "no such pool");
      return answer(status);
    },
  });
}
