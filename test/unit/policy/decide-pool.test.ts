/**
 * The pool a new session gets: isolation is a minimum the workspace's policy sets (never a
 * weaker pool; a container pool when nothing stronger is required), egress a grant, and the
 * refusals say which: `policy.isolation_required` when pools serve the image but none is as
 * isolated as required, `policy.image_not_allowed` when none serves it at all.
 */
import { describe, expect, it } from "vitest";
import { poolServing } from "../../../src/policy/decide-pool.js";
import { validatePolicyEdit } from "../../../src/policy/workspace-policy-fields.js";
import type { Isolation } from "../../../src/policy-schema/isolation-levels.js";
import type { PoolSpec } from "../../../src/runtime/sandbox-runtime.js";
import { deployment } from "./deployment.js";

function pool(name: string, isolation: Isolation | undefined, overrides: Partial<PoolSpec> = {}): PoolSpec {
  return {
    name,
    image: "img/a",
    resourceClass: "standard",
    minIdle: 0,
    maxTotal: 1,
    warmupConcurrency: 1,
    coldStartTimeoutMs: 1_000,
    ...(isolation === undefined ? {} : { isolation }),
    ...overrides,
  };
}

const policy = (isolation: Isolation, egressAllowed = false) => ({
  resourceClass: "standard",
  egressAllowed,
  isolation,
});

describe("poolServing", () => {
  const plain = pool("plain", undefined);
  const gvisor = pool("gv", "gvisor");
  const gvisorEgress = pool("gv-egress", "gvisor", { egress: true });
  const plainEgress = pool("plain-egress", "container", { egress: true });

  it("gives a workspace that requires nothing the container pool, whatever the order", () => {
    expect(poolServing([gvisor, plain], "img/a", policy("container")).pool).toBe(plain);
    // Only a gvisor pool serves the image: stronger than required is fine.
    expect(poolServing([gvisor], "img/a", policy("container")).pool).toBe(gvisor);
  });

  it("gives a workspace that requires gvisor only gvisor pools", () => {
    const verdict = poolServing([plain, gvisor], "img/a", policy("gvisor"));
    expect(verdict).toMatchObject({ allowed: true, rule: "image.pool", field: "isolation", value: "gvisor" });
    expect(verdict.pool).toBe(gvisor);
  });

  it("refuses with policy.isolation_required when pools serve the image but none with gvisor", () => {
    const verdict = poolServing([plain, plainEgress], "img/a", policy("gvisor", true));
    expect(verdict).toMatchObject({
      allowed: false,
      rule: "image.isolation",
      field: "isolation",
      value: "gvisor",
      asked: "img/a",
      refusal: { code: "policy.isolation_required" },
    });
    expect(verdict.refusal?.message).toBe(
      "the workspace requires gvisor isolation, and no gvisor pool serves the image 'img/a' in the 'standard' class",
    );
  });

  it("refuses with policy.image_not_allowed when no pool serves the image at all", () => {
    expect(poolServing([plain], "img/b", policy("gvisor"))).toMatchObject({
      allowed: false,
      refusal: { code: "policy.image_not_allowed" },
    });
    expect(poolServing([gvisorEgress], "img/a", policy("gvisor"))).toMatchObject({
      refusal: { code: "policy.image_not_allowed" },
    });
  });

  it("keeps egress a grant at every isolation level", () => {
    const pools = [plain, plainEgress, gvisor, gvisorEgress];
    expect(poolServing(pools, "img/a", policy("container", true)).pool).toBe(plainEgress);
    expect(poolServing(pools, "img/a", policy("gvisor", true)).pool).toBe(gvisorEgress);
    expect(poolServing(pools, "img/a", policy("gvisor", false)).pool).toBe(gvisor);
    expect(poolServing([plain, gvisorEgress], "img/a", policy("gvisor", true)).pool).toBe(gvisorEgress);
  });
});

describe("a workspace row's isolation", () => {
  it("may raise the deployment's, never lower it", () => {
    expect(validatePolicyEdit({ isolation: "gvisor" }, deployment(), ["standard"]).isolation).toBe("gvisor");
    expect(validatePolicyEdit({ isolation: "container" }, deployment(), ["standard"]).isolation).toBe(
      "container",
    );
    expect(() =>
      validatePolicyEdit({ isolation: "container" }, deployment({ isolation: "gvisor" }), ["standard"]),
    ).toThrow(/isolation: the deployment requires gvisor/);
    expect(() => validatePolicyEdit({ isolation: "kata" }, deployment(), ["standard"])).toThrow();
  });
});
