/**
 * Nodes in the admin API (on edges and `--role all`): the registry, and an operator's drain.
 * A draining node takes no new lease; its sessions finish or expire, then its sandboxes go.
 * Drains are audited. One host (`--role all`) has no nodes.
 */
import { SandpoolError } from "../contract/error-codes.js";
import type { GatewayServices } from "../http/gateway-services.js";
import type { OperationHandler, OperationHandlers } from "../operations/handler.js";
import { actorOf, answer } from "./admin-call.js";

export function nodeHandlers(services: GatewayServices): OperationHandlers {
  const setDraining =
    (action: "drain" | "undrain"): OperationHandler =>
    async ({ args, caller, log }) => {
      const id = args.params.id!;
      if (!services.nodes || !(await services.nodes.setDraining(id, action === "drain")))
        throw new SandpoolError("request.not_found", "no such node");
      const actor = actorOf(caller);
      await services.adminAudit?.record({ actor, action: `node.${action}`, target: id });
      log.info({ node: id, actor }, `node ${action === "drain" ? "drained" : "undrained"} by an operator`);
      return answer(await services.nodes.get(id));
    };
  return {
    "admin.nodes.list": async () => answer({ items: (await services.nodes?.list()) ?? [] }),
    "admin.nodes.drain": setDraining("drain"),
    "admin.nodes.undrain": setDraining("undrain"),
  };
}
