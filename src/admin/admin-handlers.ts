/**
 * Every admin operation's handler, by operation id (src/operations/admin-operations.ts
 * declares them). Handlers get admitted arguments and answer an Outcome; none sees HTTP.
 * Each group declares the parts it uses; a gateway without nodes (one host) has an empty
 * node directory.
 */
import type { ExplainDeps } from "../explain/explain-deps.js";
import { explainHandler } from "../explain/explain-handler.js";
import { adminOperations } from "../operations/admin-operations.js";
import type { OperationHandlers } from "../operations/handler.js";
import { handlersFor } from "../operations/typed-handlers.js";
import { type AdminSessionDeps, adminSessionHandlers } from "./admin-session-handlers.js";
import { type AuditDeps, auditHandlers } from "./audit-handlers.js";
import { keyHandlers } from "./key-handlers.js";
import { NO_NODES, type NodeDeps, nodeHandlers } from "./node-handlers.js";
import { type PolicySetDeps, policySetHandlers } from "./policy-set-handlers.js";
import { type PoolDeps, poolHandlers } from "./pool-handlers.js";
import { secretHandlers } from "./secret-handlers.js";
import { type UsageDeps, usageHandlers } from "./usage-handlers.js";
import { type WorkspaceDeps, workspaceHandlers } from "./workspace-handlers.js";

/** What the admin API's handlers need, together: each group takes its own part of it. */
export type AdminDeps = WorkspaceDeps &
  UsageDeps &
  PoolDeps &
  AdminSessionDeps &
  AuditDeps &
  ExplainDeps &
  Omit<NodeDeps, "nodes"> & {
    /** The node registry (role edge); absent on one host, which has no nodes. */
    nodes?: NodeDeps["nodes"];
    apiKeyAdmin: Parameters<typeof keyHandlers>[0];
    /** Workspace secrets (names and bindings out, values in only); policy files rebind them. */
    secretStore: Parameters<typeof secretHandlers>[0] & PolicySetDeps["secretStore"];
  };

export function adminHandlers(deps: AdminDeps): OperationHandlers {
  return {
    ...workspaceHandlers(deps),
    ...policySetHandlers(deps),
    ...usageHandlers(deps),
    ...poolHandlers(deps),
    ...nodeHandlers({ nodes: deps.nodes ?? NO_NODES, adminAudit: deps.adminAudit }),
    ...adminSessionHandlers(deps),
    ...keyHandlers(deps.apiKeyAdmin),
    ...secretHandlers(deps.secretStore),
    ...auditHandlers(deps),
    ...handlersFor(adminOperations, { "admin.explain": explainHandler(deps) }),
  };
}
