/**
 * The usage backlog in memory (usage-backlog.ts), for the memory store: the same queue,
 * claimed batch and claim per workspace as on Redis, with the same rules.
 */
import type { ClaimedUsage, UsageBacklog, UsageBacklogSize, UsageClaim } from "./usage-backlog.js";

interface WorkspaceBacklog {
  queued: string[];
  claimed: string[];
  claim?: { token: string; until: number };
}

export class MemoryUsageBacklog implements Omit<UsageBacklog, "flushCallEnds"> {
  private readonly backlogs = new Map<string, WorkspaceBacklog>();

  append(workspace: string, record: string): void {
    this.of(workspace).queued.push(record);
  }

  async appendUsage(workspace: string, records: readonly string[]): Promise<void> {
    if (records.length > 0) this.of(workspace).queued.push(...records);
  }

  async claimUsage(workspace: string, claim: UsageClaim): Promise<ClaimedUsage> {
    const backlog = this.of(workspace);
    if (backlog.claim && backlog.claim.token !== claim.token && backlog.claim.until > claim.now) {
      return { outcome: "busy" };
    }
    if (backlog.claimed.length === 0) {
      backlog.claimed = backlog.queued.splice(0, Math.max(1, Math.floor(claim.max)));
    }
    if (backlog.claimed.length === 0) {
      // Nothing waits: no claim is kept.
      this.backlogs.delete(workspace);
      return { outcome: "claimed", records: [] };
    }
    backlog.claim = { token: claim.token, until: claim.now + claim.claimMs };
    return { outcome: "claimed", records: [...backlog.claimed] };
  }

  async ackUsage(workspace: string, token: string): Promise<boolean> {
    const backlog = this.backlogs.get(workspace);
    if (backlog?.claim?.token !== token) return false;
    backlog.claimed = [];
    delete backlog.claim;
    if (backlog.queued.length === 0) this.backlogs.delete(workspace);
    return true;
  }

  async usageWorkspaces(_now?: number): Promise<string[]> {
    return [...this.backlogs.keys()];
  }

  /** Every workspace with a backlog is listed already. */
  async markUsageWaiting(_workspace: string, _waiting: boolean): Promise<void> {}

  async usageBacklogSize(workspace: string): Promise<UsageBacklogSize> {
    const backlog = this.backlogs.get(workspace);
    if (!backlog) return { records: 0 };
    const oldest = backlog.claimed[0] ?? backlog.queued[0];
    return {
      records: backlog.claimed.length + backlog.queued.length,
      ...(oldest === undefined ? {} : { oldest }),
    };
  }

  private of(workspace: string): WorkspaceBacklog {
    let backlog = this.backlogs.get(workspace);
    if (!backlog) {
      backlog = { queued: [], claimed: [] };
      this.backlogs.set(workspace, backlog);
    }
    return backlog;
  }
}
