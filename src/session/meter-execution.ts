/**
 * Ends an Execute: charges it its wall time (at most what was reserved) with the call's end
 * (written behind by the store, src/store/coordination/redis/redis-call-steps.ts), and
 * records it with that end, in the same write (the usage backlog). Runs whether the call
 * answered or failed: the time was spent either way. The usage record is journaled first
 * (src/metering/usage-journal.ts), before the answer is released. A store failure here leaves the
 * reservation charged in full, which is the safe side.
 */

import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { OpenCall } from "../operations/resolved-session.js";

/** What metering an Execute needs: its duration metric (its usage goes with the call's end). */
export interface MeterDeps {
  metrics: Pick<GatewayMetrics, "execDuration">;
}

/**
 * Ends the call now (its usage record journaled before the answer is released) and returns
 * what sends the end to the store, which the caller runs once the answer is written.
 */
export function meterExecution(
  services: MeterDeps,
  tool: string,
  call: OpenCall,
  wallMs: number,
): () => Promise<number> {
  services.metrics.execDuration.observe({ tool }, wallMs / 1000);
  return call.ending(wallMs, { kind: "exec", tool });
}
