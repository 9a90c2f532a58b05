/**
 * The deployment's policy: the ceilings no workspace can exceed and the values that
 * apply to a workspace without a policy row. Part of the gateway configuration.
 */
import { z } from "zod";
import { toolKinds } from "../contract/schemas.js";
import { settingDocs } from "../contract/setting-docs.js";
import { cidrSchema, hostPatternSchema } from "./egress-schemas.js";
import { isolationLevels } from "./isolation-levels.js";

const positive = z.number().int().min(1);

export const deploymentPolicySchema = z
  .strictObject({
    allowedImages: z
      .array(z.string().min(1))
      .min(1)
      .register(settingDocs, {
        doc: "Images sessions may use; each needs a pool in policy.resourceClass.",
        example: ["sandpool/sandbox:dev"],
      }),
    defaultImage: z
      .string()
      .min(1)
      .register(settingDocs, {
        doc: "Image of a session that names none; one of allowedImages.",
        example: "sandpool/sandbox:dev",
        env: {
          name: "SANDPOOL_DEFAULT_IMAGE",
          description:
            "default image; also added to policy.allowedImages, and the image of pool 'default' when the file has no pools",
          landing: "defaultImage",
        },
      }),
    allowedTools: z
      .array(z.enum(toolKinds))
      .min(1)
      .default([...toolKinds])
      .register(settingDocs, { doc: "Tool kinds sessions may call." }),
    execTimeoutCeilingSeconds: positive
      .default(300)
      .register(settingDocs, { doc: "Ceiling of an execution's timeout_seconds." }),
    /** timeout_seconds when a call sends none (clamped by the ceiling in force). */
    defaultExecTimeoutSeconds: positive
      .default(60)
      .register(settingDocs, { doc: "The timeout_seconds of a call that sends none." }),
    idleTimeoutCeilingSeconds: positive
      .default(1800)
      .register(settingDocs, { doc: "Ceiling of a session's idle timeout, in seconds." }),
    maxLifetimeCeilingSeconds: positive
      .default(4 * 3600)
      .register(settingDocs, { doc: "Ceiling of a session's lifetime, in seconds." }),
    /** What a session gets when the client sends no hint (clamped by the ceilings in force). */
    defaultIdleTimeoutSeconds: positive
      .default(300)
      .register(settingDocs, { doc: "Idle timeout of a session whose client asks for none." }),
    defaultMaxLifetimeSeconds: positive
      .default(3600)
      .register(settingDocs, { doc: "Lifetime of a session whose client asks for none." }),
    maxConcurrentSessions: positive
      .default(100)
      .register(settingDocs, { doc: "Open sessions per workspace." }),
    sessionsPerMinute: positive
      .default(600)
      .register(settingDocs, { doc: "New sessions per workspace per minute." }),
    execSecondsPerDay: positive
      .default(24 * 3600)
      .register(settingDocs, { doc: "Execution seconds per workspace per day." }),
    maxFileBytes: positive
      .default(100 * 1024 * 1024)
      .register(settingDocs, { doc: "Largest file a session may upload or download, in bytes." }),
    resourceClass: z
      .string()
      .min(1)
      .default("standard")
      .register(settingDocs, { doc: "Resource class of the sandboxes sessions get." }),
    /**
     * The least isolation every workspace's sandboxes get (a row may only raise it): gvisor
     * leases only pools with `isolation: gvisor` (docs/isolation.md).
     */
    isolation: z.enum(isolationLevels).default("container").register(settingDocs, {
      doc: "The least isolation of every workspace's sandboxes (a workspace may raise it): gvisor leases only gvisor pools.",
    }),
    egressAllowed: z
      .boolean()
      .default(false)
      .register(settingDocs, { doc: "Whether sandboxes may reach the network." }),
    /**
     * Ranges egress may reach although the defaults deny them (src/egress/egress-rules.ts):
     * every workspace's grant, and the ceiling of what a workspace row may allow.
     */
    egressAllowCidrs: z.array(cidrSchema).default([]).register(settingDocs, {
      doc: "Ranges egress may reach although denied by default (private, loopback, ...); a workspace may only narrow them.",
    }),
    /** When non-empty, the only host names egress may reach (exact, or `*.suffix`); the ceiling of a row's list. */
    egressAllowHosts: z.array(hostPatternSchema).default([]).register(settingDocs, {
      doc: "When set, the only host names egress may reach (pypi.org, *.pythonhosted.org); empty: any.",
    }),
    /**
     * Whether a session's sandbox, scrubbed, may serve its workspace's next session instead of
     * a container start (src/pool/sandbox-reuse.ts); a workspace row may only turn it off.
     */
    sandboxReuse: z.boolean().default(true).register(settingDocs, {
      doc: "A session's sandbox, scrubbed, serves its workspace's next session instead of a container start; a workspace may turn it off.",
    }),
  })
  .refine((p) => p.allowedImages.includes(p.defaultImage), {
    message: "defaultImage must be one of allowedImages",
    path: ["defaultImage"],
  });

export type DeploymentPolicy = z.output<typeof deploymentPolicySchema>;
export type DeploymentPolicyInput = z.input<typeof deploymentPolicySchema>;
