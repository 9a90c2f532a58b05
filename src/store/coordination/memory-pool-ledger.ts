/**
 * The memory store's pools' ledger (pool-ledger.ts): members, their warming, retiring and
 * in-flight marks, and the idle and parked queues, as the Redis store's scripts keep them.
 * Nothing awaits between a read and its write (memory-store.ts).
 */
import { ExpiringSet, getOrCreate } from "./memory-expiring-set.js";
import type { PoolLedger, StartMarks } from "./pool-ledger.js";
import type { MemberHold, SandboxRecord } from "./records.js";

export class MemoryPoolLedger implements PoolLedger {
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

  // A read-only view for explain.
  async countIdle(pool: string) {
    return this.idle.get(pool)?.length ?? 0;
  }
}

/** Takes one sandbox's record out of a queue, if it is there. */
function takeById(records: SandboxRecord[] | undefined, sandboxId: string): SandboxRecord | undefined {
  const index = records?.findIndex((record) => record.sandboxId === sandboxId) ?? -1;
  return index >= 0 ? records!.splice(index, 1)[0] : undefined;
}
