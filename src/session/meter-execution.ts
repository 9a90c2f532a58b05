/**
 * Ends an Execute: charges it its wall time (at most what was reserved) with the call's end
 * (written behind by the store, src/store/coordination/redis/redis-call-steps.ts), and
 * records it. Runs whether the call answered or failed: the time was spent either way. A
 * store failure here leaves the reservation charged in full, which is the safe side.
 */

import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { UsageSink } from "../metering/usage-sink.js";
import type { OpenCall } from "../operations/resolved-session.js";

/** What metering an Execute needs: its duration metric and the usage sink. */
export interface MeterDeps {
  metrics: Pick<GatewayMetrics, "execDuration">;
  usage: Pick<UsageSink, "record">;
}

export async function meterExecution(
  services: MeterDeps,
  key: { workspace: string; sessionId: string },
  tool: string,
  call: OpenCall,
  wallMs: number,
): Promise<void> {
  services.metrics.execDuration.observe({ tool }, wallMs / 1000);
  const chargedMs = await call.end(wallMs);
  services.usage.record({
    workspace: key.workspace,
    sessionId: key.sessionId,
    kind: "exec",
    tool,
    quantity: chargedMs,
  });
}
