/**
 * Operators' edits of workspace policy: validated against the deployment (a row may only
 * narrow), written with an audit record (who, when, before, after), and announced to every
 * replica, whose cached copy is dropped at once; the short cache TTL bounds staleness even
 * if an announcement is lost.
 */

import type { DeploymentPolicy } from "../policy-schema/deployment-policy.js";
import { announceCommitted } from "../store/coordination/announce.js";
import type { Broadcast } from "../store/coordination/broadcast.js";
import type { PolicyRepository, PolicySetChange } from "../store/sql/policy-repository.js";
import type { PolicyAuditRow, WorkspacePolicyRow } from "../store/sql/policy-row.js";
import { type EffectivePolicy, effectivePolicy } from "./effective-policy.js";
import { validatePolicySet } from "./policy-set.js";
import { validatePolicyEdit } from "./workspace-policy-fields.js";

export const POLICY_CHANNEL = "sandpool:policy-changed";

export class PolicyAdmin {
  constructor(
    private readonly deployment: DeploymentPolicy,
    private readonly resourceClasses: readonly string[],
    private readonly repository: PolicyRepository,
    private readonly store: Pick<Broadcast, "publish">,
  ) {}

  get(workspace: string): Promise<WorkspacePolicyRow | undefined> {
    return this.repository.get(workspace);
  }

  list(): Promise<WorkspacePolicyRow[]> {
    return this.repository.list();
  }

  /** Applies an edit (absent fields unchanged, null clears a narrowing); 422 above a ceiling. */
  async put(workspace: string, edit: unknown, actor: string): Promise<WorkspacePolicyRow> {
    const fields = validatePolicyEdit(edit, this.deployment, this.resourceClasses);
    const row = await this.repository.put(workspace, fields, actor);
    await announceCommitted(this.store, POLICY_CHANNEL, workspace);
    return row;
  }

  async delete(workspace: string, actor: string): Promise<boolean> {
    const deleted = await this.repository.delete(workspace, actor);
    await announceCommitted(this.store, POLICY_CHANNEL, workspace);
    return deleted;
  }

  /**
   * Applies a whole policy set (policy as code, src/policy/policy-set.ts) in one transaction:
   * refused whole, every problem listed, when any entry is invalid; each workspace changed is
   * audited and announced like a single edit. Answers every workspace's change.
   */
  async apply(input: unknown, actor: string, dryRun: boolean): Promise<PolicySetChange[]> {
    const desired = validatePolicySet(input, this.deployment, this.resourceClasses);
    const changes = await this.repository.applySet(desired, actor, dryRun);
    if (!dryRun) {
      for (const change of changes)
        if (change.action !== "unchanged")
          await announceCommitted(this.store, POLICY_CHANNEL, change.workspace);
    }
    return changes;
  }

  audit(workspace: string, limit?: number): Promise<PolicyAuditRow[]> {
    return this.repository.audit(workspace, limit);
  }

  /** The policy in force and where each value comes from: what `explain` shows operators. */
  async explain(
    workspace: string,
  ): Promise<{ effective: EffectivePolicy; row: WorkspacePolicyRow | undefined }> {
    const row = await this.repository.get(workspace);
    return { effective: effectivePolicy(workspace, this.deployment, row), row };
  }
}
