/**
 * The deployment's policy: the ceilings no workspace can exceed and the values that
 * apply to a workspace without a policy row. Part of the gateway configuration.
 */
import { z } from "zod";
import { toolKinds } from "../contract/schemas.js";
import { cidrSchema, hostPatternSchema } from "./egress-schemas.js";
import { isolationLevels } from "./isolation-levels.js";

const positive = z.number().int().min(1);

export const deploymentPolicySchema = z
  .strictObject({
    allowedImages: z.array(z.string().min(1)).min(1),
    defaultImage: z.string().min(1),
    allowedTools: z
      .array(z.enum(toolKinds))
      .min(1)
      .default([...toolKinds]),
    execTimeoutCeilingSeconds: positive.default(300),
    /** timeout_seconds when a call sends none (clamped by the ceiling in force). */
    defaultExecTimeoutSeconds: positive.default(60),
    idleTimeoutCeilingSeconds: positive.default(1800),
    maxLifetimeCeilingSeconds: positive.default(4 * 3600),
    /** What a session gets when the client sends no hint (clamped by the ceilings in force). */
    defaultIdleTimeoutSeconds: positive.default(300),
    defaultMaxLifetimeSeconds: positive.default(3600),
    maxConcurrentSessions: positive.default(100),
    sessionsPerMinute: positive.default(600),
    execSecondsPerDay: positive.default(24 * 3600),
    maxFileBytes: positive.default(100 * 1024 * 1024),
    resourceClass: z.string().min(1).default("standard"),
    /**
     * The least isolation every workspace's sandboxes get (a row may only raise it): gvisor
     * leases only pools with `isolation: gvisor` (docs/isolation.md).
     */
    isolation: z.enum(isolationLevels).default("container"),
    egressAllowed: z.boolean().default(false),
    /**
     * Ranges egress may reach although the defaults deny them (src/egress/egress-rules.ts):
     * every workspace's grant, and the ceiling of what a workspace row may allow.
     */
    egressAllowCidrs: z.array(cidrSchema).default([]),
    /** When non-empty, the only host names egress may reach (exact, or `*.suffix`); the ceiling of a row's list. */
    egressAllowHosts: z.array(hostPatternSchema).default([]),
    /**
     * Whether a session's sandbox, scrubbed, may serve its workspace's next session instead of
     * a container start (src/pool/sandbox-reuse.ts); a workspace row may only turn it off.
     */
    sandboxReuse: z.boolean().default(true),
  })
  .refine((p) => p.allowedImages.includes(p.defaultImage), {
    message: "defaultImage must be one of allowedImages",
    path: ["defaultImage"],
  });

export type DeploymentPolicy = z.output<typeof deploymentPolicySchema>;
export type DeploymentPolicyInput = z.input<typeof deploymentPolicySchema>;
