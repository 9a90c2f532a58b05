/**
 * Answers "what policy is in force for workspace W" on the request path. Rows are cached
 * so a request costs no database round trip: past its TTL an entry is still answered
 * while one background read refreshes it (so the database stays off the request path even
 * for a workspace seen once a minute). An edit invalidates the entry at once on this
 * replica and, through the coordination store's broadcast, on every other one, so edits
 * take effect everywhere within a second; the TTL bounds staleness if a broadcast is lost.
 */
import type { DeploymentPolicy } from "../policy-schema/deployment-policy.js";
import { type EffectivePolicy, effectivePolicy } from "./effective-policy.js";
import type { WorkspacePolicyFields } from "./workspace-policy-fields.js";

export interface WorkspacePolicyStore {
  get(workspace: string): Promise<WorkspacePolicyFields | undefined>;
}

interface CacheEntry {
  policy: Promise<EffectivePolicy>;
  expiresAt: number;
  refreshing?: boolean;
}

const MAX_CACHED_WORKSPACES = 10_000;

export class PolicyService {
  private readonly cache = new Map<string, CacheEntry>();

  constructor(
    readonly deployment: DeploymentPolicy,
    private readonly source: WorkspacePolicyStore,
    private readonly ttlMs = 1_000,
    private readonly now: () => number = Date.now,
  ) {}

  forWorkspace(workspace: string): Promise<EffectivePolicy> {
    const cached = this.cache.get(workspace);
    if (cached && cached.expiresAt > this.now()) return cached.policy;
    if (cached && !cached.refreshing) {
      cached.refreshing = true;
      // After this turn of the event loop: the request that found the entry stale is
      // answered first, and the read does not sit between it and its response.
      setImmediate(() => {
        const fresh = this.read(workspace);
        // Swapped in only once read, and only if nothing replaced the entry meanwhile.
        fresh.then(
          () => {
            if (this.cache.get(workspace) === cached) this.store(workspace, fresh);
          },
          () => {
            cached.refreshing = false;
          },
        );
      });
    }
    if (cached) return cached.policy;
    const policy = this.read(workspace);
    // A failed read is not cached: the next request tries again.
    policy.catch(() => {
      if (this.cache.get(workspace)?.policy === policy) this.cache.delete(workspace);
    });
    this.store(workspace, policy);
    return policy;
  }

  private read(workspace: string): Promise<EffectivePolicy> {
    return this.source.get(workspace).then((row) => effectivePolicy(workspace, this.deployment, row));
  }

  private store(workspace: string, policy: Promise<EffectivePolicy>): void {
    if (!this.cache.has(workspace) && this.cache.size >= MAX_CACHED_WORKSPACES) {
      this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(workspace, { policy, expiresAt: this.now() + this.ttlMs });
  }

  invalidate(workspace?: string): void {
    if (workspace === undefined) this.cache.clear();
    else this.cache.delete(workspace);
  }
}
