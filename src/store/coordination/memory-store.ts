/**
 * The coordination store in one process's memory: dev mode and unit tests. Same semantics
 * as the Redis store (expiring slots and members, atomic pops and takes), without the
 * network. Every method is atomic because nothing awaits between its read and its write: a
 * method that does what another does calls that one's synchronous body (`...Now`), never the
 * async method, whose await would let a call of another task (a takeLease) run in between,
 * as a Redis script never can.
 */
import type { CoordinationStore } from "./coordination-store.js";
import { MemoryPoolDemand } from "./memory-pool-demand.js";
import { MemoryUsageBacklog } from "./memory-usage-backlog.js";
import type { PoolDemandDelta } from "./pool-demand-exchange.js";
import type { StartMarks } from "./pool-ledger.js";
import {
  type AdmissionVerdict,
  type CallEnd,
  type CallMark,
  type CallStart,
  type CallStarted,
  type CpuCharge,
  type CpuCharged,
  type HibernationStep,
  type HibernationStepped,
  hibernationStepRefusal,
  type Lease,
  type LeaseKey,
  leaseDeadline,
  type MemberHold,
  type QuietQuery,
  quietSince,
  runsASandbox,
  type SandboxRecord,
  type SessionAdmission,
  type SessionEndUsage,
} from "./records.js";
import type { UsageClaim } from "./usage-backlog.js";

/** token -> expiry, with expired entries dropped whenever the set is read. */
class ExpiringSet {
  private readonly entries = new Map<string, number>();

  live(now: number): number {
    for (const [token, expiresAt] of this.entries) if (expiresAt <= now) this.entries.delete(token);
    return this.entries.size;
  }

  add(token: string, limit: number, expiresAt: number, now: number): boolean {
    const live = this.live(now); // an expired token is not held, even if not yet purged
    if (this.entries.has(token)) {
      this.entries.set(token, expiresAt);
      return true;
    }
    if (live >= limit) return false;
    this.entries.set(token, expiresAt);
    return true;
  }

  /** Whether the token is in the set, expired or not: an expired one not yet purged has no successor. */
  contains(token: string): boolean {
    return this.entries.has(token);
  }

  has(token: string, now: number): boolean {
    const expiresAt = this.entries.get(token);
    return expiresAt !== undefined && expiresAt > now;
  }

  renew(token: string, expiresAt: number): void {
    if (this.entries.has(token)) this.entries.set(token, expiresAt);
  }

  delete(token: string): void {
    this.entries.delete(token);
  }

  tokens(): string[] {
    return [...this.entries.keys()];
  }
}

const leaseId = (key: LeaseKey) => `${key.workspace}\u0000${key.sessionId}`;

function getOrCreate<K, V>(map: Map<K, V>, key: K, create: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = create();
    map.set(key, value);
  }
  return value;
}

export class MemoryCoordinationStore implements CoordinationStore {
  private readonly slots = new Map<string, ExpiringSet>();
  private readonly rates = new Map<string, number[]>();
  private readonly budgets = new Map<string, number>();
  /** workspace + day -> the day's CPU total (ms); workspace + session -> its last CPU reading. */
  private readonly cpuDays = new Map<string, number>();
  private readonly cpuReadings = new Map<string, number>();
  private readonly cpuEnded = new Set<string>();
  private readonly members = new Map<string, ExpiringSet>();
  /** Per pool, the members warm-up is starting (see PoolLedger.addMember, warming). */
  private readonly warming = new Map<string, ExpiringSet>();
  /** Per pool, the members waiting to be destroyed (see PoolLedger.markRetiring). */
  private readonly retiring = new Map<string, ExpiringSet>();
  /** Per pool, starts and hand-outs in flight: sandbox id -> mark's expiry, lapsed ones kept. */
  private readonly inFlight = new Map<string, Map<string, number>>();
  private readonly idle = new Map<string, SandboxRecord[]>();
  /** Per pool, newest first. */
  private readonly parked = new Map<string, SandboxRecord[]>();
  private readonly leases = new Map<string, Lease>();
  private readonly subscribers = new Map<string, ((message: string) => void)[]>();
  private readonly demand = new MemoryPoolDemand();
  private readonly usage = new MemoryUsageBacklog();

  async acquireSlot(workspace: string, token: string, limit: number, expiresAt: number, now: number) {
    return getOrCreate(this.slots, workspace, () => new ExpiringSet()).add(token, limit, expiresAt, now);
  }

  async admitSession(workspace: string, a: SessionAdmission): Promise<AdmissionVerdict> {
    if (this.usedOf(`${workspace}\u0000${a.budgetDay}`) >= a.budgetLimitMs) {
      return { admitted: false, refused: "exec_budget" };
    }
    const slots = getOrCreate(this.slots, workspace, () => new ExpiringSet());
    if (!slots.has(a.token, a.now) && slots.live(a.now) >= a.slotLimit) {
      return { admitted: false, refused: "concurrent_sessions" };
    }
    const waitMs = this.waitForRate(workspace, a.ratePerWindow, a.rateWindowMs, a.now);
    if (waitMs > 0) return { admitted: false, refused: "session_rate", waitMs };
    this.rates.get(workspace)!.push(a.now);
    slots.add(a.token, Number.MAX_SAFE_INTEGER, a.slotExpiresAt, a.now);
    return { admitted: true };
  }

  async releaseSlot(workspace: string, token: string) {
    this.slots.get(workspace)?.delete(token);
  }

  async countSlots(workspace: string, now: number) {
    return this.slots.get(workspace)?.live(now) ?? 0;
  }

  async takeRate(workspace: string, limit: number, windowMs: number, now: number) {
    const waitMs = this.waitForRate(workspace, limit, windowMs, now);
    if (waitMs === 0) this.rates.get(workspace)!.push(now);
    return waitMs;
  }

  /** 0 when the window has room for one more event, else the milliseconds until it will. */
  private waitForRate(workspace: string, limit: number, windowMs: number, now: number): number {
    const events = getOrCreate(this.rates, workspace, () => []);
    while (events.length > 0 && events[0]! <= now - windowMs) events.shift();
    return events.length >= limit ? Math.max(1, events[0]! + windowMs - now) : 0;
  }

  async reserveBudget(workspace: string, day: string, requestedMs: number, limitMs: number) {
    return this.reserveBudgetNow(workspace, day, requestedMs, limitMs);
  }

  private reserveBudgetNow(workspace: string, day: string, requestedMs: number, limitMs: number): number {
    const key = `${workspace}\u0000${day}`;
    const granted = Math.max(0, Math.min(requestedMs, limitMs - this.usedOf(key)));
    if (granted > 0) this.budgets.set(key, (this.budgets.get(key) ?? 0) + granted);
    return granted;
  }

  async refundBudget(workspace: string, day: string, milliseconds: number) {
    return this.refundBudgetNow(workspace, day, milliseconds);
  }

  private refundBudgetNow(workspace: string, day: string, milliseconds: number): number {
    const key = `${workspace}\u0000${day}`;
    const used = this.budgets.get(key);
    if (used === undefined) return 0;
    const total = Math.max(0, used - milliseconds);
    this.budgets.set(key, total);
    return total;
  }

  async readBudget(workspace: string, day: string) {
    return this.usedOf(`${workspace}\u0000${day}`);
  }

  /** What a day has used: the larger of its calls' wall time and its sandboxes' CPU. */
  private usedOf(dayKey: string): number {
    return Math.max(this.budgets.get(dayKey) ?? 0, this.cpuDays.get(dayKey) ?? 0);
  }

  async chargeCpu(workspace: string, charge: CpuCharge): Promise<CpuCharged> {
    const readingKey = `${workspace}\u0000${charge.sessionId}`;
    let chargedMs = 0;
    if (!this.cpuEnded.has(readingKey) && charge.cpuMs !== undefined) {
      const reading = Math.floor(charge.cpuMs);
      const last = this.cpuReadings.get(readingKey) ?? charge.baseMs ?? reading;
      chargedMs = Math.max(0, reading - Math.floor(last));
      if (!charge.final) this.cpuReadings.set(readingKey, Math.max(last, reading));
    }
    if (charge.final) {
      this.cpuReadings.delete(readingKey);
      // Sessions are never reused: the mark only has to outlive a meter round, kept for the store's life.
      this.cpuEnded.add(readingKey);
    }
    const dayKey = `${workspace}\u0000${charge.day}`;
    const cpuDayMs = (this.cpuDays.get(dayKey) ?? 0) + chargedMs;
    this.cpuDays.set(dayKey, cpuDayMs);
    return { chargedMs, cpuDayMs, usedMs: Math.max(this.budgets.get(dayKey) ?? 0, cpuDayMs) };
  }

  async addMember(
    pool: string,
    sandboxId: string,
    maxTotal: number,
    expiresAt: number,
    now: number,
    marks: StartMarks = {},
  ) {
    const held = getOrCreate(this.members, pool, () => new ExpiringSet()).add(
      sandboxId,
      maxTotal,
      expiresAt,
      now,
    );
    // In the same step, as the Redis script: no lease may see the place taken and not yet marked.
    if (held && marks.warming) {
      getOrCreate(this.warming, pool, () => new ExpiringSet()).add(sandboxId, Infinity, expiresAt, now);
    }
    if (held && marks.inFlightUntil) this.markInFlight(pool, sandboxId, marks.inFlightUntil);
    return held;
  }

  async renewInFlight(pool: string, sandboxIds: readonly string[], until: number, _now: number) {
    const marks = this.inFlight.get(pool);
    for (const sandboxId of sandboxIds) if (marks?.has(sandboxId)) marks.set(sandboxId, until);
  }

  async listInFlight(pool: string) {
    return [...(this.inFlight.get(pool) ?? [])].map(([sandboxId, until]) => ({ sandboxId, until }));
  }

  async endInFlight(pool: string, sandboxId: string) {
    this.inFlight.get(pool)?.delete(sandboxId);
  }

  async reclaimInFlight(pool: string, sandboxId: string, now: number) {
    const mark = this.inFlight.get(pool)?.get(sandboxId);
    if (mark === undefined || mark > now) return false;
    if (this.retiring.get(pool)?.has(sandboxId, now)) return false;
    this.removeMemberNow(pool, sandboxId);
    return true;
  }

  private markInFlight(pool: string, sandboxId: string, until: number): void {
    getOrCreate(this.inFlight, pool, () => new Map()).set(sandboxId, until);
  }

  async renewMember(pool: string, sandboxId: string, expiresAt: number, _now: number) {
    this.members.get(pool)?.renew(sandboxId, expiresAt);
  }

  async removeMember(pool: string, sandboxId: string) {
    this.removeMemberNow(pool, sandboxId);
  }

  private removeMemberNow(pool: string, sandboxId: string): void {
    this.members.get(pool)?.delete(sandboxId);
    this.warming.get(pool)?.delete(sandboxId);
    this.retiring.get(pool)?.delete(sandboxId);
    this.inFlight.get(pool)?.delete(sandboxId);
  }

  async markRetiring(pool: string, sandboxId: string, expiresAt: number, now: number) {
    getOrCreate(this.retiring, pool, () => new ExpiringSet()).add(sandboxId, Infinity, expiresAt, now);
  }

  async countRetiring(pool: string, now: number) {
    return this.retiring.get(pool)?.live(now) ?? 0;
  }

  async countMembers(pool: string, now: number) {
    return this.members.get(pool)?.live(now) ?? 0;
  }

  async countWarming(pool: string, now: number) {
    return this.warming.get(pool)?.live(now) ?? 0;
  }

  async listMembers(pool: string, now: number) {
    const members = this.members.get(pool);
    if (!members) return [];
    members.live(now);
    return members.tokens();
  }

  async pushIdle(record: SandboxRecord, membership?: { until: number; now: number }) {
    return this.queue(record, membership, { list: this.idle, endsMark: this.warming, newestFirst: false });
  }

  async parkIdle(record: SandboxRecord, membership: { until: number; now: number }) {
    return this.queue(record, membership, { list: this.parked, endsMark: this.retiring, newestFirst: true });
  }

  /** Both queues as the Redis store's one script: a member only (when given), one mark and the in-flight mark ended. */
  private queue(
    record: SandboxRecord,
    membership: { until: number; now: number } | undefined,
    into: { list: Map<string, SandboxRecord[]>; endsMark: Map<string, ExpiringSet>; newestFirst: boolean },
  ): boolean {
    if (membership) {
      const members = this.members.get(record.pool);
      if (!members?.contains(record.sandboxId)) return false;
      members.renew(record.sandboxId, membership.until);
    }
    const list = getOrCreate(into.list, record.pool, () => []);
    if (into.newestFirst) list.unshift(record);
    else list.push(record);
    into.endsMark.get(record.pool)?.delete(record.sandboxId);
    this.inFlight.get(record.pool)?.delete(record.sandboxId);
    return true;
  }

  async listParked(pool: string) {
    return [...(this.parked.get(pool) ?? [])];
  }

  async takeParked(pool: string, sandboxId: string) {
    return takeById(this.parked.get(pool), sandboxId);
  }

  async popParked(pool: string) {
    return this.parked.get(pool)?.pop();
  }

  async popIdle(pool: string) {
    return this.idle.get(pool)?.shift();
  }

  async leaseIdle(pool: string, hold: MemberHold) {
    const parked = this.parked.get(pool) ?? [];
    const own = hold.reuse === false ? -1 : parked.findIndex((record) => record.owner === hold.workspace);
    const record = own >= 0 ? parked.splice(own, 1)[0] : this.idle.get(pool)?.shift();
    if (record) {
      this.members.get(pool)?.renew(record.sandboxId, hold.until);
      if (hold.handOverBy) this.markInFlight(pool, record.sandboxId, hold.handOverBy);
    }
    return record;
  }

  // Every lease is in one map here: no holders to record for the reaper.
  async holdMember(pool: string, sandboxId: string, hold: MemberHold) {
    const members = this.members.get(pool);
    if (!members?.contains(sandboxId)) return false;
    members.renew(sandboxId, hold.until);
    if (hold.handOverBy) this.markInFlight(pool, sandboxId, hold.handOverBy);
    return true;
  }

  async takeIdle(pool: string, sandboxId: string) {
    return takeById(this.idle.get(pool), sandboxId);
  }

  async listIdle(pool: string) {
    return [...(this.idle.get(pool) ?? [])];
  }

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
      grantedMs = this.reserveBudgetNow(key.workspace, day, Math.max(1, Math.ceil(requestedMs)), limitMs);
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
      this.refundBudgetNow(key.workspace, end.refund.day, Math.floor(end.refund.milliseconds));
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

  appendUsage(workspace: string, records: readonly string[]) {
    return this.usage.appendUsage(workspace, records);
  }

  claimUsage(workspace: string, claim: UsageClaim) {
    return this.usage.claimUsage(workspace, claim);
  }

  ackUsage(workspace: string, token: string) {
    return this.usage.ackUsage(workspace, token);
  }

  usageWorkspaces(_now: number) {
    return this.usage.usageWorkspaces();
  }

  usageBacklogSize(workspace: string) {
    return this.usage.usageBacklogSize(workspace);
  }

  /** Every workspace with a backlog is listed already. */
  async markUsageWaiting(_workspace: string, _waiting: boolean) {}

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

  // Read-only views for explain: nothing is purged or recorded.
  async countRate(workspace: string, windowMs: number, now: number) {
    const live = (this.rates.get(workspace) ?? []).filter((at) => at > now - windowMs);
    return { count: live.length, oldestAt: live[0] ?? null };
  }

  async countIdle(pool: string) {
    return this.idle.get(pool)?.length ?? 0;
  }

  async exchangePoolDemand(pool: string, delta: PoolDemandDelta, window: number) {
    return this.demand.exchange(pool, delta, window);
  }

  async publish(channel: string, message: string) {
    for (const handler of this.subscribers.get(channel) ?? []) queueMicrotask(() => handler(message));
  }

  async subscribe(channel: string, handler: (message: string) => void) {
    getOrCreate(this.subscribers, channel, () => []).push(handler);
  }

  async close() {
    this.subscribers.clear();
  }
}

/** Takes one sandbox's record out of a queue, if it is there. */
function takeById(records: SandboxRecord[] | undefined, sandboxId: string): SandboxRecord | undefined {
  const index = records?.findIndex((record) => record.sandboxId === sandboxId) ?? -1;
  return index >= 0 ? records!.splice(index, 1)[0] : undefined;
}
