/**
 * The gateway's operations assembled once per app: the pipeline's dependencies (the
 * authenticator, the audit sink, the session layer) and the handler maps of the groups this
 * gateway serves. The HTTP route table (src/http/gateway-app.ts) and the in-process `call`
 * are both built from it, so a call made in process takes exactly the path of one over HTTP.
 * The admin API's handlers plug in here as another group's map.
 */

import { discoveryHandlers } from "../discovery/discovery-handlers.js";
import type { GatewayServices } from "../http/gateway-services.js";
import type { OperationHandlers } from "../operations/handler.js";
import { type InProcessCall, inProcessCall } from "../pipeline/call.js";
import type { PipelineDeps } from "../pipeline/pipeline.js";
import { serviceHandlers } from "../service/service-handlers.js";
import { contractHandlers } from "../session/contract-handlers.js";
import { SessionCalls } from "../session/session-calls.js";

export interface GatewayOperations {
  deps: PipelineDeps;
  contract: OperationHandlers;
  service: OperationHandlers;
}

export function gatewayOperations(services: GatewayServices): GatewayOperations {
  return {
    deps: {
      check: services,
      usage: services.usage,
      sessions: new SessionCalls({
        sessions: services.sessions,
        policies: services.policies,
        limits: services.limits,
      }),
    },
    contract: contractHandlers(services),
    service: { ...serviceHandlers(services), ...discoveryHandlers },
  };
}

/** Calls any contract or service operation in process, through the pipeline. */
export function gatewayCall(services: GatewayServices): InProcessCall {
  const built = gatewayOperations(services);
  return inProcessCall(built.deps, { ...built.contract, ...built.service }, services.log);
}
