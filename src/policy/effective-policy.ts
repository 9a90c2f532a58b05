/**
 * The policy in force for one workspace: the deployment's policy narrowed by the
 * workspace's row (DESIGN.md section 5). A row may veto and narrow, never grant: every
 * value is the stricter of the two, lists are intersected, and no row at all means the
 * deployment values apply (`configured: false`).
 */
import type { ToolKind } from "../contract/schemas.js";
import type { DeploymentPolicy } from "./deployment-policy.js";
import type { WorkspacePolicyFields } from "./workspace-policy-fields.js";

export interface EffectivePolicy {
  workspace: string;
  configured: boolean;
  enabled: boolean;
  allowedImages: string[];
  /** Undefined when the row narrows the images so far that none is left. */
  defaultImage: string | undefined;
  allowedTools: ToolKind[];
  execTimeoutCeilingSeconds: number;
  defaultExecTimeoutSeconds: number;
  idleTimeoutCeilingSeconds: number;
  maxLifetimeCeilingSeconds: number;
  defaultIdleTimeoutSeconds: number;
  defaultMaxLifetimeSeconds: number;
  maxConcurrentSessions: number;
  sessionsPerMinute: number;
  execSecondsPerDay: number;
  maxFileBytes: number;
  resourceClass: string;
  egressAllowed: boolean;
}

const stricter = (ceiling: number, narrowed: number | null | undefined) =>
  narrowed == null ? ceiling : Math.min(ceiling, narrowed);

function intersect<T>(allowed: readonly T[], narrowed: readonly T[] | null | undefined): T[] {
  return narrowed == null ? [...allowed] : allowed.filter((item) => narrowed.includes(item));
}

export function effectivePolicy(
  workspace: string,
  deployment: DeploymentPolicy,
  row: WorkspacePolicyFields | undefined,
): EffectivePolicy {
  const allowedImages = intersect(deployment.allowedImages, row?.allowedImages);
  const preferred = row?.defaultImage ?? deployment.defaultImage;
  const idleCeiling = stricter(deployment.idleTimeoutCeilingSeconds, row?.idleTimeoutCeilingSeconds);
  const lifetimeCeiling = stricter(deployment.maxLifetimeCeilingSeconds, row?.maxLifetimeCeilingSeconds);
  const execCeiling = stricter(deployment.execTimeoutCeilingSeconds, row?.execTimeoutCeilingSeconds);
  return {
    workspace,
    configured: row !== undefined,
    enabled: row?.enabled ?? true,
    allowedImages,
    defaultImage: allowedImages.includes(preferred) ? preferred : allowedImages[0],
    allowedTools: intersect(deployment.allowedTools, row?.allowedTools),
    execTimeoutCeilingSeconds: execCeiling,
    defaultExecTimeoutSeconds: Math.min(deployment.defaultExecTimeoutSeconds, execCeiling),
    idleTimeoutCeilingSeconds: idleCeiling,
    maxLifetimeCeilingSeconds: lifetimeCeiling,
    defaultIdleTimeoutSeconds: Math.min(deployment.defaultIdleTimeoutSeconds, idleCeiling),
    defaultMaxLifetimeSeconds: Math.min(deployment.defaultMaxLifetimeSeconds, lifetimeCeiling),
    maxConcurrentSessions: stricter(deployment.maxConcurrentSessions, row?.maxConcurrentSessions),
    sessionsPerMinute: stricter(deployment.sessionsPerMinute, row?.sessionsPerMinute),
    execSecondsPerDay: stricter(deployment.execSecondsPerDay, row?.execSecondsPerDay),
    maxFileBytes: stricter(deployment.maxFileBytes, row?.maxFileBytes),
    // A row may pick another class only where the deployment has a pool for it (checked on write).
    resourceClass: row?.resourceClass ?? deployment.resourceClass,
    // Egress is a grant: only where both the deployment and the row allow it.
    egressAllowed: deployment.egressAllowed && (row?.egressAllowed ?? true),
  };
}
