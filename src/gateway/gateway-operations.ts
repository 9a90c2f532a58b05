/**
 * The gateway's operations assembled once: the pipeline's dependencies (the authenticator,
 * the audit sink, the session layer) and the handler maps of the groups this gateway serves,
 * each group given the narrow part of the gateway's parts it declares. The HTTP route table
 * (src/http/gateway-app.ts) and the in-process `call` are both built from it, so a call made
 * in process takes exactly the path of one over HTTP.
 */

import { adminHandlers } from "../admin/admin-handlers.js";
import { discoveryHandlers } from "../discovery/discovery-handlers.js";
import type { ServedOperations } from "../http/gateway-app.js";
import { assertEveryOperationHandled } from "../operations/unhandled-operations.js";
import { type InProcessCall, inProcessCall } from "../pipeline/call.js";
import { serviceHandlers } from "../service-operations/service-handlers.js";
import { contractHandlers } from "../session/contract-handlers.js";
import { SessionCalls } from "../session/session-calls.js";
import type { GatewayParts } from "./gateway-parts.js";

export function gatewayOperations(parts: GatewayParts): Required<ServedOperations> {
  const built: Required<ServedOperations> = {
    deps: {
      check: parts,
      usage: parts.usage,
      sessions: new SessionCalls({
        sessions: parts.sessions,
        policies: parts.policies,
        limits: parts.limits,
      }),
    },
    contract: contractHandlers(parts),
    service: { ...serviceHandlers(parts), ...discoveryHandlers },
    admin: adminHandlers(parts),
  };
  // A declared operation without a handler would answer as an unknown route: refuse to start.
  assertEveryOperationHandled({ contract: built.contract, service: built.service, admin: built.admin });
  return built;
}

/** Calls any contract or service operation in process, through the pipeline. */
export function gatewayCall(parts: GatewayParts): InProcessCall {
  const built = gatewayOperations(parts);
  return inProcessCall(built.deps, { ...built.contract, ...built.service }, parts.log);
}
