/** What the gateway's middleware hands to its routes, per request. */
import type { HttpBindings } from "@hono/node-server";
import type { Logger } from "pino";
import type { Caller, Principal } from "../auth/principal.js";

export interface GatewayEnv {
  Bindings: HttpBindings;
  Variables: {
    requestId: string;
    log: Logger;
    /** The operation name used as the `route` metric label. */
    operation: string;
    /** The contract operation's id (`sessions.exec`), once the call matched one. */
    operationId?: string;
    principal: Principal;
    /** A caller a middleware verified before the route, with or without a workspace (the admin API's). */
    caller?: Caller;
    /**
     * Keeps the call counted in flight after its handler returns (a streamed answer); the
     * caller then owns the returned release. Set by withinCallsInFlight.
     */
    holdCallInFlight: () => () => void;
  };
}
