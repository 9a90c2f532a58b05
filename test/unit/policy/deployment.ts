/** A deployment policy for policy tests: every ceiling set, two images, all tools, egress on. */
import {
  type DeploymentPolicy,
  deploymentPolicySchema,
} from "../../../src/policy-schema/deployment-policy.js";

export function deployment(overrides: Partial<DeploymentPolicy> = {}): DeploymentPolicy {
  return {
    ...deploymentPolicySchema.parse({
      allowedImages: ["img/a", "img/b", "img/c"],
      defaultImage: "img/a",
      execTimeoutCeilingSeconds: 300,
      defaultExecTimeoutSeconds: 60,
      idleTimeoutCeilingSeconds: 1800,
      maxLifetimeCeilingSeconds: 14_400,
      defaultIdleTimeoutSeconds: 300,
      defaultMaxLifetimeSeconds: 3600,
      maxConcurrentSessions: 10,
      sessionsPerMinute: 60,
      execSecondsPerDay: 86_400,
      maxFileBytes: 1_000_000,
      resourceClass: "standard",
      egressAllowed: true,
    }),
    ...overrides,
  };
}
