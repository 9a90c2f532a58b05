/**
 * Every admin operation's handler, by operation id (src/operations/admin-operations.ts
 * declares them). Handlers get admitted arguments and answer an Outcome; none sees HTTP.
 */
import { explainHandler } from "../explain/explain-handler.js";
import type { GatewayServices } from "../http/gateway-services.js";
import type { OperationHandlers } from "../operations/handler.js";
import type { PolicyAdmin } from "../policy/policy-admin.js";
import { sessionHandlers } from "./admin-session-handlers.js";
import { auditHandlers } from "./audit-handlers.js";
import { keyHandlers } from "./key-handlers.js";
import { nodeHandlers } from "./node-handlers.js";
import { policySetHandlers } from "./policy-set-handlers.js";
import { poolHandlers } from "./pool-handlers.js";
import { usageHandlers } from "./usage-handlers.js";
import { workspaceHandlers } from "./workspace-handlers.js";

export function adminHandlers(services: GatewayServices, policyAdmin: PolicyAdmin): OperationHandlers {
  return {
    ...workspaceHandlers(services, policyAdmin),
    ...policySetHandlers(policyAdmin),
    ...usageHandlers(services),
    ...poolHandlers(services),
    ...nodeHandlers(services),
    ...sessionHandlers(services),
    ...keyHandlers(services),
    ...auditHandlers(services),
    "admin.explain": explainHandler(services),
  };
}
