/**
 * Charges an Execute its wall time (at most what was reserved) and records it. Runs whether
 * the call answered or failed: the time was spent either way. A store failure here leaves
 * the reservation charged in full, which is the safe side.
 */
import type { ExecReservation } from "../../quota/admission.js";
import type { GatewayServices } from "../gateway-services.js";

export async function meterExecution(
  services: GatewayServices,
  key: { workspace: string; sessionId: string },
  tool: string,
  reservation: ExecReservation,
  wallMs: number,
): Promise<void> {
  services.metrics.execDuration.observe({ tool }, wallMs / 1000);
  let chargedMs = reservation.grantedMs;
  try {
    chargedMs = await services.admission.settleExec(reservation, wallMs);
  } catch (error) {
    services.log.warn({ err: error, session: key.sessionId }, "could not settle an execution reservation");
  }
  services.usage.record({
    workspace: key.workspace,
    sessionId: key.sessionId,
    kind: "exec",
    tool,
    quantity: chargedMs,
  });
}
