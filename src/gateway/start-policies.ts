/**
 * Start-up step "policies": workspace policies read through a short-lived cache that every
 * replica drops on an edit's announcement, and their admin edits. The egress proxy is bound
 * to them by start-egress-grants.ts (once usage and metrics exist).
 */
import type { GatewayConfig } from "../config/gateway-config.js";
import { POLICY_CHANNEL, PolicyAdmin } from "../policy/policy-admin.js";
import { PolicyService } from "../policy/policy-service.js";
import { PolicyRepository } from "../store/sql/policy-repository.js";
import type { GatewayBackends } from "./gateway-backends.js";

export interface StartedPolicies {
  policyRepository: PolicyRepository;
  policies: PolicyService;
  policyAdmin: PolicyAdmin;
}

export async function startPolicies(
  config: GatewayConfig,
  backends: Pick<GatewayBackends, "store" | "db">,
): Promise<StartedPolicies> {
  const { store } = backends;
  const policyRepository = new PolicyRepository(backends.db);
  const policies = new PolicyService(config.policy, policyRepository, config.policyCacheTtlMs);
  await store.subscribe(POLICY_CHANNEL, (workspace) => policies.invalidate(workspace || undefined));
  const resourceClasses = [...new Set(config.pools.map((pool) => pool.resourceClass))];
  const policyAdmin = new PolicyAdmin(config.policy, resourceClasses, policyRepository, store);
  return { policyRepository, policies, policyAdmin };
}
