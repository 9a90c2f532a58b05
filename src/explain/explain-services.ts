/** What explain reads: the policy, the admission and pool previews, and the leases (read only). */
import type { GatewayServices } from "../http/gateway-services.js";

export type ExplainServices = Pick<GatewayServices, "policies" | "admission" | "pools" | "sessions">;
