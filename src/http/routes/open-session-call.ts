/**
 * The first steps of every call on an existing session: resolve it (pipeline step 3: an
 * unknown, ended or other workspace's session is the same 404) and check that the
 * workspace may still run anything (step 5: a disabled workspace's open sessions are
 * refused too, not only its new ones).
 */
import type { Context } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import type { EffectivePolicy } from "../../policy/effective-policy.js";
import type { Lease, LeaseKey } from "../../store/coordination/records.js";
import type { GatewayEnv } from "../gateway-env.js";
import type { GatewayServices } from "../gateway-services.js";
import { sessionKey } from "./session-routes.js";

export interface SessionCall {
  key: LeaseKey;
  lease: Lease;
  policy: EffectivePolicy;
}

export async function openSessionCall(
  c: Context<GatewayEnv>,
  services: GatewayServices,
): Promise<SessionCall> {
  const key = sessionKey(c);
  const lease = await services.sessions.resolve(key);
  const policy = await services.policies.forWorkspace(key.workspace);
  if (!policy.enabled) throw new SandpoolError("policy.workspace_disabled", "the workspace is disabled");
  return { key, lease, policy };
}
