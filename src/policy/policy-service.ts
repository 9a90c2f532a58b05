/**
 * Answers "what policy is in force for workspace W" on the request path. Rows are cached
 * for a short time so a request costs no database round trip; an edit invalidates the
 * entry at once on this replica and, through the coordination store's broadcast, on every
 * other one, so edits take effect everywhere within a second.
 */
import type { DeploymentPolicy } from "./deployment-policy.js";
import { type EffectivePolicy, effectivePolicy } from "./effective-policy.js";
import type { WorkspacePolicyFields } from "./workspace-policy-fields.js";

export interface PolicySource {
  get(workspace: string): Promise<WorkspacePolicyFields | undefined>;
}

interface CacheEntry {
  policy: Promise<EffectivePolicy>;
  expiresAt: number;
}

const MAX_CACHED_WORKSPACES = 10_000;

export class PolicyService {
  private readonly cache = new Map<string, CacheEntry>();

  constructor(
    readonly deployment: DeploymentPolicy,
    private readonly source: PolicySource,
    private readonly ttlMs = 1_000,
    private readonly now: () => number = Date.now,
  ) {}

  forWorkspace(workspace: string): Promise<EffectivePolicy> {
    const cached = this.cache.get(workspace);
    if (cached && cached.expiresAt > this.now()) return cached.policy;
    const policy = this.source.get(workspace).then((row) => effectivePolicy(workspace, this.deployment, row));
    // A failed read is not cached: the next request tries again.
    policy.catch(() => {
      if (this.cache.get(workspace)?.policy === policy) this.cache.delete(workspace);
    });
    if (this.cache.size >= MAX_CACHED_WORKSPACES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(workspace, { policy, expiresAt: this.now() + this.ttlMs });
    return policy;
  }

  invalidate(workspace?: string): void {
    if (workspace === undefined) this.cache.clear();
    else this.cache.delete(workspace);
  }
}
