/**
 * Nodes in the admin API (`/admin/v1/nodes`, on edges and `--role all`): the registry, and
 * an operator's drain. A draining node takes no new lease; its sessions finish or expire,
 * then its sandboxes go. Drains are audited. One host (`--role all`) has no nodes.
 *
 *   GET  /nodes               200 { items: NodeView[] }
 *   POST /nodes/:id/drain     200 NodeView   (404 unknown node)
 *   POST /nodes/:id/undrain   200 NodeView
 */
import { Hono } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import type { GatewayServices } from "../gateway-services.js";
import { type AdminEnv, actorOf } from "./admin-routes.js";

export function adminNodesRoutes(services: GatewayServices): Hono<AdminEnv> {
  const routes = new Hono<AdminEnv>();
  routes.get("/", async (c) => {
    c.set("operation", "AdminNodes");
    return c.json({ items: (await services.nodes?.list()) ?? [] });
  });
  for (const action of ["drain", "undrain"] as const) {
    routes.post(`/:id/${action}`, async (c) => {
      c.set("operation", action === "drain" ? "AdminDrainNode" : "AdminUndrainNode");
      const id = c.req.param("id");
      if (!services.nodes || !(await services.nodes.setDraining(id, action === "drain"))) {
        throw new SandpoolError("request.not_found", "no such node");
      }
      const actor = actorOf(c.get("caller"));
      await services.adminAudit?.record({ actor, action: `node.${action}`, target: id });
      c.get("log").info(
        { node: id, actor },
        `node ${action === "drain" ? "drained" : "undrained"} by an operator`,
      );
      return c.json(await services.nodes.get(id));
    });
  }
  return routes;
}
