/**
 * Nodes in the admin API (on edges and `--role all`): the registry, and an operator's drain.
 * A draining node takes no new lease; its sessions finish or expire, then its sandboxes go
 * (with shared checkpoints the edges hibernate them, and they resume on other nodes:
 * src/roles/edge/drain-hibernation.ts).
 * Drains are audited. One host (`--role all`) has no nodes: its directory is empty
 * (`NO_NODES`), so the list is empty and a drain names no node (404).
 */
import { SandpoolError } from "../contract/error-codes.js";
import { type AdminOperation, adminOperations } from "../operations/admin-operations.js";
import type { OperationHandlers } from "../operations/handler.js";
import { handlersFor, type TypedHandler } from "../operations/typed-handlers.js";
import type { NodeRegistry } from "../roles/shared/node-registry.js";
import type { AdminAuditRepository } from "../store/sql/admin-audit-repository.js";
import { actorOf, answer } from "./admin-call.js";

/** What the admin API reads and changes of the nodes. */
export type AdminNodeDirectory = Pick<NodeRegistry, "list" | "get" | "setDraining">;

/** The directory of a gateway without nodes (one host, `--role all`). */
export const NO_NODES: AdminNodeDirectory = {
  list: async () => [],
  get: async () => undefined,
  setDraining: async () => false,
};

export interface NodeDeps {
  nodes: AdminNodeDirectory;
  adminAudit: Pick<AdminAuditRepository, "record">;
}

export function nodeHandlers({ nodes, adminAudit }: NodeDeps): OperationHandlers {
  const setDraining =
    (
      action: "drain" | "undrain",
    ): TypedHandler<AdminOperation<"admin.nodes.drain" | "admin.nodes.undrain">> =>
    async ({ args, caller, log }) => {
      const id = args.params.id;
      if (!(await nodes.setDraining(id, action === "drain")))
        throw new SandpoolError("request.not_found", "no such node");
      const actor = actorOf(caller);
      await adminAudit.record({ actor, action: `node.${action}`, target: id });
      log.info({ node: id, actor }, `node ${action === "drain" ? "drained" : "undrained"} by an operator`);
      // Gone between the drain and the read (deregistered): as unknown as before it.
      const node = await nodes.get(id);
      if (!node) throw new SandpoolError("request.not_found", "no such node");
      return answer(node);
    };
  return handlersFor(adminOperations, {
    "admin.nodes.list": async () => answer({ items: await nodes.list() }),
    "admin.nodes.drain": setDraining("drain"),
    "admin.nodes.undrain": setDraining("undrain"),
  });
}
