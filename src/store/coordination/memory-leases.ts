/**
 * The memory store's leases (lease-store.ts), in one map. Nothing awaits between a read and
 * its write (memory-store.ts): `beginCall` and `endCall` reserve and refund budget through
 * the admission part's synchronous bodies, and usage is appended in the same step.
 */
import type { LeaseStore } from "./lease-store.js";
import type { MemoryAdmission } from "./memory-admission.js";
import type { MemoryUsageBacklog } from "./memory-usage-backlog.js";
import {
  type CallEnd,
  type CallMark,
  type CallStart,
  type CallStarted,
  type HibernationStep,
  type HibernationStepped,
  hibernationStepRefusal,
  type Lease,
  type LeaseKey,
  leaseDeadline,
  type QuietQuery,
  quietSince,
  runsASandbox,
  type SessionEndUsage,
} from "./records.js";

const leaseId = (key: LeaseKey) => `${key.workspace}\u0000${key.sessionId}`;

export class MemoryLeases implements LeaseStore {
  private readonly leases = new Map<string, Lease>();

  constructor(
    private readonly budget: Pick<MemoryAdmission, "reserveBudgetNow" | "refundBudgetNow">,
    private readonly usage: Pick<MemoryUsageBacklog, "append">,
  ) {}

  async putLease(lease: Lease, usage?: string) {
    this.leases.set(leaseId(lease), structuredClone(lease));
    if (usage !== undefined) this.usage.append(lease.workspace, usage);
  }

  async getLease(key: LeaseKey) {
    const lease = this.leases.get(leaseId(key));
    return lease && structuredClone(lease);
  }

  async touchLease(key: LeaseKey, now: number, call?: CallMark) {
    return this.touchLeaseNow(key, now, call);
  }

  private touchLeaseNow(key: LeaseKey, now: number, call?: CallMark): Lease | undefined {
    const lease = this.leases.get(leaseId(key));
    if (!lease) return undefined;
    lease.lastActivityAt = Math.max(lease.lastActivityAt, now);
    if (call && "begin" in call) {
      lease.activeCalls = (lease.activeCalls ?? 0) + 1;
      lease.busyUntil = Math.max(lease.busyUntil ?? 0, call.begin);
    } else if (call) {
      lease.activeCalls = Math.max(0, (lease.activeCalls ?? 0) - 1);
      if (lease.activeCalls === 0) delete lease.busyUntil;
    }
    return structuredClone(lease);
  }

  async beginCall(key: LeaseKey, start: CallStart): Promise<CallStarted> {
    const lease = this.leases.get(leaseId(key));
    if (!lease) return { outcome: "gone" };
    if (leaseDeadline(lease) <= start.now) return { outcome: "expired" };
    if (lease.hibernation) return { outcome: "hibernated" };
    let grantedMs = 0;
    if (start.budget) {
      const { day, requestedMs, limitMs } = start.budget;
      grantedMs = this.budget.reserveBudgetNow(
        key.workspace,
        day,
        Math.max(1, Math.ceil(requestedMs)),
        limitMs,
      );
      if (grantedMs <= 0) return { outcome: "budget_spent" };
    }
    const marked = this.touchLeaseNow(key, start.now, { begin: start.busyUntil });
    if (!marked) throw new Error("the lease went while its call began (no await may run in between)");
    return { outcome: "started", lease: marked, grantedMs };
  }

  async endCall(key: LeaseKey, end: CallEnd) {
    // The call was served, whether its lease is still there or not.
    if (end.usage !== undefined) this.usage.append(key.workspace, end.usage);
    if (end.refund && end.refund.milliseconds > 0) {
      this.budget.refundBudgetNow(key.workspace, end.refund.day, Math.floor(end.refund.milliseconds));
    }
    return this.touchLeaseNow(key, end.now, { end: true }) !== undefined;
  }

  async stepHibernation(key: LeaseKey, step: HibernationStep): Promise<HibernationStepped> {
    const lease = this.leases.get(leaseId(key));
    if (!lease) return { outcome: "gone" };
    const refused = hibernationStepRefusal(lease, step);
    if (refused === "busy") return { outcome: "busy" };
    if (refused) return { outcome: "elsewhere", lease: structuredClone(lease) };
    if (step.to) lease.hibernation = structuredClone(step.to);
    else delete lease.hibernation;
    if (step.activity) lease.lastActivityAt = Math.max(lease.lastActivityAt, step.now);
    if (step.refused) lease.hibernationRefused = structuredClone(step.refused);
    else if (lease.hibernation?.phase === "saved") delete lease.hibernationRefused;
    if (step.sandbox) {
      lease.sandbox = structuredClone(step.sandbox);
      // A session resumed on another node is served there from now on.
      if (step.sandbox.node === undefined) delete lease.node;
      else lease.node = step.sandbox.node;
    }
    return { outcome: "stepped", lease: structuredClone(lease) };
  }

  async takeLease(key: LeaseKey, ended?: SessionEndUsage) {
    const lease = this.leases.get(leaseId(key));
    this.leases.delete(leaseId(key));
    if (lease && ended) {
      const record = JSON.parse(ended.record) as { quantity?: number; sandboxId?: string };
      record.quantity = Math.max(0, ended.now - lease.createdAt);
      record.sandboxId = lease.sandbox.sandboxId;
      this.usage.append(key.workspace, JSON.stringify(record));
    }
    return lease;
  }

  /** Ends are applied as they are made. */
  async flushCallEnds() {}

  async dueLeases(now: number, limit: number) {
    const due: LeaseKey[] = [];
    for (const lease of this.leases.values()) {
      if (due.length >= limit) break;
      if (leaseDeadline(lease) <= now) due.push({ workspace: lease.workspace, sessionId: lease.sessionId });
    }
    return due;
  }

  async quietLeases(query: QuietQuery) {
    const quiet = (lease: Lease, cutoff: number) => runsASandbox(lease) && quietSince(lease) <= cutoff;
    const workspaces = new Set<string>();
    for (const lease of this.leases.values()) if (quiet(lease, query.latest)) workspaces.add(lease.workspace);
    const found: Lease[] = [];
    for (const workspace of workspaces) {
      const cutoff = await query.cutoff(workspace);
      if (cutoff === null) continue;
      // Read after the wait: the leases as they are now.
      const ofWorkspace = [...this.leases.values()]
        .filter((lease) => lease.workspace === workspace && quiet(lease, Math.min(cutoff, query.latest)))
        .sort((a, b) => quietSince(a) - quietSince(b));
      for (const lease of ofWorkspace.slice(0, query.limit)) found.push(structuredClone(lease));
    }
    return found;
  }

  async listLeases() {
    return [...this.leases.values()].map((lease) => structuredClone(lease));
  }
}
