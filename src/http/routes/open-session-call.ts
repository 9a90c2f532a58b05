/**
 * The first steps of every call on an existing session, in the pipeline's order: resolve it
 * (step 3: an unknown, ended or other workspace's session is the same 404), check that the
 * workspace may still run anything (step 5: a disabled workspace's open sessions are refused
 * too, not only its new ones), reserve what it asks of the budget (step 6) and mark the
 * session busy. The policy comes from the replica's cache, so all of it is one round trip
 * to the store (`SessionLifecycle.beginCall`); an answer that refuses the call before that
 * step (`refuseInOrder`) resolves the session first, so a 404 still comes before anything else.
 */
import type { Context } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import type { EffectivePolicy } from "../../policy/effective-policy.js";
import type { CallOptions, OpenCall } from "../../session/session-lifecycle.js";
import type { LeaseKey } from "../../store/coordination/records.js";
import type { GatewayEnv } from "../gateway-env.js";
import type { GatewayServices } from "../gateway-services.js";
import { sessionKey } from "./session-routes.js";

export interface SessionCall {
  key: LeaseKey;
  policy: EffectivePolicy;
}

/** The session's key and the policy in force, or the refusal of a disabled workspace. */
export async function sessionCallPolicy(
  c: Context<GatewayEnv>,
  services: GatewayServices,
): Promise<SessionCall> {
  const key = sessionKey(c);
  const policy = await services.policies.forWorkspace(key.workspace);
  if (!policy.enabled) {
    await refuseInOrder(
      services,
      key,
      new SandpoolError("policy.workspace_disabled", "the workspace is disabled"),
    );
  }
  return { key, policy };
}

/** Throws `refusal`, or the session's 404 when there is no such session: that comes first. */
export async function refuseInOrder(
  services: GatewayServices,
  key: LeaseKey,
  refusal: unknown,
): Promise<never> {
  await services.sessions.resolve(key);
  throw refusal;
}

/** Resolves, checks and begins a call that reserves no budget (files). */
export async function openSessionCall(
  c: Context<GatewayEnv>,
  services: GatewayServices,
  options: CallOptions,
): Promise<SessionCall & { call: OpenCall }> {
  const { key, policy } = await sessionCallPolicy(c, services);
  return { key, policy, call: await services.sessions.beginCall(key, options) };
}
