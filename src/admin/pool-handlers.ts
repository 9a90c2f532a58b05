/**
 * Pools in the admin API: what each pool holds right now, and its sizes changed at run time.
 * A resize is validated (404 unknown pool; 422 listing every problem: not whole numbers, out
 * of 0..1000, minIdle above maxTotal once applied), persisted, audited, and in force on every
 * replica within a second (src/pool/pool-sizes.ts). A null size goes back to the configured
 * value. Shrinking never ends a session: a pool above its new maxTotal starts nothing until
 * sessions end.
 */
import { SandpoolError } from "../contract/error-codes.js";
import type { GatewayServices } from "../http/gateway-services.js";
import type { OperationHandlers } from "../operations/handler.js";
import { actorOf, answer } from "./admin-call.js";

export function poolHandlers(services: GatewayServices): OperationHandlers {
  const poolStatus = async () => {
    if (!services.poolStatus)
      throw new SandpoolError("request.not_found", "pool status is not available here");
    return services.poolStatus();
  };
  return {
    "admin.pools.list": async () => answer({ items: await poolStatus() }),

    "admin.pools.resize": async ({ args, caller, log }) => {
      const sizes = services.poolSizes;
      if (!sizes) throw new SandpoolError("request.not_found", "pools cannot be resized here");
      const name = args.params.name!;
      const actor = actorOf(caller);
      await sizes.resize(name, args.body, actor);
      const status = (await poolStatus()).find((pool) => pool.name === name);
      log.info({ pool: name, actor, minIdle: status?.minIdle, maxTotal: status?.maxTotal }, "pool resized");
      return answer(status);
    },
  };
}
