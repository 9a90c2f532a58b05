/**
 * Which pool serves a new session: one of the image in the workspace's resource class, at
 * least as isolated as its policy requires (`isolation`, a minimum), with egress only where
 * the policy grants it. Pure, like decide-access.ts: the pools and the policy in, a verdict
 * out, which CreateSession enforces and explain reports.
 */
import type { Isolation } from "../policy-schema/isolation-levels.js";
import type { PoolSpec } from "../runtime/sandbox-runtime.js";
import type { EffectivePolicy } from "./effective-policy.js";
import { allow, deny, type PolicyVerdict } from "./verdict.js";

export interface PoolVerdict extends PolicyVerdict {
  pool: PoolSpec | undefined;
}

type PoolPolicy = Pick<EffectivePolicy, "resourceClass" | "egressAllowed" | "isolation">;

const isolationOf = (pool: PoolSpec): Isolation => pool.isolation ?? "container";

/**
 * Among the pools that qualify, the least isolated (a workspace that does not require gVisor
 * gets a container pool when one serves its image: cheaper, and what it asked for); egress
 * is a permission, never a default: a workspace allowed egress gets an egress pool when there
 * is one (else one without), a workspace without it never gets one.
 */
export function poolServing(pools: readonly PoolSpec[], image: string, policy: PoolPolicy): PoolVerdict {
  const serving = pools.filter((pool) => pool.image === image && pool.resourceClass === policy.resourceClass);
  const usable = (candidates: PoolSpec[]) => {
    const ordered = [...candidates].sort((a, b) => rank(isolationOf(a)) - rank(isolationOf(b)));
    const isolated = ordered.find((pool) => !pool.egress);
    return policy.egressAllowed ? (ordered.find((pool) => pool.egress) ?? isolated) : isolated;
  };
  const pool = usable(serving.filter((pool) => rank(isolationOf(pool)) >= rank(policy.isolation)));
  if (pool) {
    return {
      ...allow("image.pool", "isolation", policy.isolation, image),
      pool,
    };
  }
  if (usable(serving)) {
    // Pools serve the image, none as isolated as the workspace must be: never a weaker one.
    return {
      ...deny(
        "image.isolation",
        "isolation",
        policy.isolation,
        {
          code: "policy.isolation_required",
          message: `the workspace requires ${policy.isolation} isolation, and no ${policy.isolation} pool serves the image '${image}' in the '${policy.resourceClass}' class`,
        },
        image,
      ),
      pool: undefined,
    };
  }
  return {
    ...deny(
      "image.pool",
      "resourceClass",
      policy.resourceClass,
      {
        code: "policy.image_not_allowed",
        message: `no pool serves the image '${image}' in the '${policy.resourceClass}' class`,
      },
      image,
    ),
    pool: undefined,
  };
}

function rank(isolation: Isolation): number {
  return isolation === "gvisor" ? 1 : 0;
}
