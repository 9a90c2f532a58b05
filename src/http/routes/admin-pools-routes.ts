/**
 * Pools in the admin API (`/admin/v1/pools`): what each pool holds right now, and its sizes
 * changed at run time. A resize is validated (404 unknown pool; 422 listing every problem:
 * not whole numbers, out of 0..1000, minIdle above maxTotal once applied), persisted,
 * audited, and in force on every replica within a second (src/pool/pool-sizes.ts).
 *
 *   GET   /pools           200 { items: PoolStatus[] }  (src/pool/pool-status.ts)
 *   PATCH /pools/:name     200 PoolStatus   body { minIdle?: n | null, maxTotal?: m | null }
 * A null size goes back to the configured value. Shrinking never ends a session: a pool
 * above its new maxTotal starts nothing until sessions end.
 */
import { Hono } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import { jsonBodyLimit, readJsonBody } from "../common/read-json-body.js";
import type { GatewayServices } from "../gateway-services.js";
import { type AdminEnv, actorOf } from "./admin-routes.js";

export function adminPoolsRoutes(services: GatewayServices): Hono<AdminEnv> {
  const routes = new Hono<AdminEnv>();
  const poolStatus = async () => {
    if (!services.poolStatus)
      throw new SandpoolError("request.not_found", "pool status is not available here");
    return services.poolStatus();
  };

  routes.get("/", async (c) => {
    c.set("operation", "AdminPools");
    return c.json({ items: await poolStatus() });
  });

  routes.patch("/:name", jsonBodyLimit(services.limits.maxJsonBodyBytes), async (c) => {
    c.set("operation", "AdminResizePool");
    const sizes = services.poolSizes;
    if (!sizes) throw new SandpoolError("request.not_found", "pools cannot be resized here");
    const name = c.req.param("name");
    const edit = await readJsonBody(c);
    const actor = actorOf(c.get("caller"));
    await sizes.resize(name, edit, actor);
    const status = (await poolStatus()).find((pool) => pool.name === name);
    c.get("log").info(
      { pool: name, actor, minIdle: status?.minIdle, maxTotal: status?.maxTotal },
      "pool resized",
    );
    return c.json(status);
  });

  return routes;
}
