/**
 * The policy in force for one workspace: the deployment's policy narrowed by the
 * workspace's row (docs/architecture.md, "Policy"). A row may veto and narrow, never grant: every
 * value is the stricter of the two, lists are intersected, and no row at all means the
 * deployment values apply (`configured: false`).
 */
import type { ToolKind } from "../contract/schemas.js";
import type { DeploymentPolicy } from "../policy-schema/deployment-policy.js";
import { cidrWithin, hostPatternWithin } from "../policy-schema/egress-patterns.js";
import type { Isolation } from "../policy-schema/isolation-levels.js";
import {
  type CeilingField,
  type ClampedDefault,
  ceilingFields,
  ceilingOf,
  clampedDefaultOf,
} from "../policy-schema/policy-fields.js";
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
  /** The least isolation its sandboxes get: the stronger of the deployment's and the row's. */
  isolation: Isolation;
  egressAllowed: boolean;
  /** Ranges reachable although the egress defaults deny them. */
  egressAllowCidrs: string[];
  /** When non-empty, the only host names egress may reach. */
  egressAllowHosts: string[];
  /** Whether its sessions may reuse a sandbox an earlier session of it used. */
  sandboxReuse: boolean;
  /** Idle seconds after which a session hibernates; null: never (src/hibernate/). */
  hibernateAfterIdleSeconds: number | null;
  /** Hibernated sessions it may keep at once; null: no bound. */
  maxHibernatedSessions: number | null;
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
  const limits = clampedLimits(deployment, row);
  const egress = egressLists(deployment, row);
  return {
    workspace,
    configured: row !== undefined,
    enabled: row?.enabled ?? true,
    allowedImages,
    defaultImage: allowedImages.includes(preferred) ? preferred : allowedImages[0],
    allowedTools: intersect(deployment.allowedTools, row?.allowedTools),
    ...limits,
    // A row may pick another class only where the deployment has a pool for it (checked on write).
    resourceClass: row?.resourceClass ?? deployment.resourceClass,
    // A minimum: a row may raise it, never lower it (refused on write; this holds if the deployment rises later).
    isolation: row?.isolation === "gvisor" ? "gvisor" : deployment.isolation,
    // Egress is a grant: only where both the deployment and the row allow it.
    egressAllowed: deployment.egressAllowed && (row?.egressAllowed ?? true) && egress.hostsLeft,
    egressAllowCidrs: egress.cidrs,
    egressAllowHosts: egress.hosts,
    sandboxReuse: deployment.sandboxReuse && (row?.sandboxReuse ?? true),
    // The workspace's own settings: no deployment value to narrow.
    hibernateAfterIdleSeconds: row?.hibernateAfterIdleSeconds ?? null,
    maxHibernatedSessions: row?.maxHibernatedSessions ?? null,
  };
}

/**
 * Every numeric field (policy-fields.ts): the stricter of the row and the deployment's
 * ceiling; and the deployment defaults those ceilings clamp, cut to the ceiling in force.
 */
function clampedLimits(
  deployment: DeploymentPolicy,
  row: WorkspacePolicyFields | undefined,
): Record<CeilingField | ClampedDefault, number> {
  const limits = {} as Record<CeilingField | ClampedDefault, number>;
  for (const field of ceilingFields) {
    const limit = stricter(deployment[ceilingOf(field)], row?.[field]);
    limits[field] = limit;
    const clamped = clampedDefaultOf(field);
    if (clamped) limits[clamped] = Math.min(deployment[clamped], limit);
  }
  return limits;
}

/**
 * A row's egress lists, kept only as far as the deployment's still cover them (checked on
 * write; this holds when the deployment narrows later). A host list narrowed to nothing
 * cannot be written as [] (that means any host): egress is withdrawn instead (hostsLeft).
 */
function egressLists(deployment: DeploymentPolicy, row: WorkspacePolicyFields | undefined) {
  const cidrs = (row?.egressAllowCidrs ?? deployment.egressAllowCidrs).filter((cidr) =>
    cidrWithin(cidr, deployment.egressAllowCidrs),
  );
  const ceiling = deployment.egressAllowHosts;
  const rowHosts = row?.egressAllowHosts;
  if (rowHosts == null) return { cidrs, hosts: [...ceiling], hostsLeft: true };
  if (ceiling.length === 0) return { cidrs, hosts: [...rowHosts], hostsLeft: true };
  const hosts = rowHosts.filter((host) => hostPatternWithin(host, ceiling));
  return { cidrs, hosts, hostsLeft: hosts.length > 0 };
}
