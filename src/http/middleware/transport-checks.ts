/**
 * The transport's checks of every request, in this order, as one middleware (each layer of
 * middleware costs every call a step of Hono's composition): its target as it arrived (400,
 * src/http/common/request-target.ts), its Host and Origin (403, host-and-origin.ts), then the
 * bound on requests not yet authenticated (503, unauthenticated-gate.ts), which holds its
 * place until authentication passes or the answer is given.
 */
import type { MiddlewareHandler } from "hono";
import { refuseBadTarget } from "../common/request-target.js";
import { type HostTrust, hostAndOriginCheck } from "./host-and-origin.js";
import { type UnauthenticatedGate, withinUnauthenticatedBound } from "./unauthenticated-gate.js";

export function transportChecks(trust: HostTrust, gate: UnauthenticatedGate): MiddlewareHandler {
  const checkHostAndOrigin = hostAndOriginCheck(trust);
  return (c, next) => {
    refuseBadTarget(c);
    checkHostAndOrigin(c);
    return withinUnauthenticatedBound(gate, c, next);
  };
}
