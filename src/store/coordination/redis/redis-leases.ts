/**
 * The leases on Redis. A lease is one key under its workspace's hash tag
 * (`{ws:W}:lease:S`), and its deadline lives in that workspace's index (`{ws:W}:deadlines`);
 * the reaper and the listings find the workspaces from the pools' holder sets
 * (redis-holders.ts). A call's begin (resolve the lease, reserve budget, mark busy, move the
 * deadline) is one script, one round trip; its end (settle, touch, deadline) is written
 * behind, carried by the next begin's script (redis-call-ends.ts).
 *
 * Deployments from before the per-workspace index kept one global deadline index
 * (`{leases}:deadlines`): it is still read, and emptied, until nothing is left in it.
 */
import type { LeaseStore } from "../lease-store.js";
import {
  type CallEnd,
  type CallMark,
  type CallStart,
  type CallStarted,
  type Lease,
  type LeaseKey,
  leaseDeadline,
} from "../records.js";
import { CALL_STEPS_SCRIPT, RedisCallEnds } from "./redis-call-ends.js";
import type { RedisCommands } from "./redis-commands.js";
import type { RedisHolders } from "./redis-holders.js";
import { BUDGET_KEY_TTL_MS } from "./redis-keys.js";

/** A lease key outlives the session's own deadline by this much; the reaper ends it first. */
const LEASE_KEY_GRACE_MS = 10 * 60_000;
/** Commands sent at once by the listings (one per workspace). */
const LIST_CONCURRENCY = 16;

const lifetimeEnd = (lease: Lease) => lease.createdAt + lease.maxLifetimeSeconds * 1000;
const leaseEnd = (lease: Lease) => lifetimeEnd(lease) + LEASE_KEY_GRACE_MS;

export class RedisLeases implements LeaseStore {
  /** Whether the legacy deadline index had entries when last read. */
  private legacyIndexInUse = true;
  private readonly ends: RedisCallEnds;

  constructor(
    private readonly commands: RedisCommands,
    private readonly holders: RedisHolders,
  ) {
    this.ends = new RedisCallEnds(commands);
  }

  async putLease(lease: Lease) {
    const { keys } = this.commands;
    const now = Date.now();
    // Findable by the reaper: its workspace is among its pool's holders (a lease made by
    // CreateSession is: leaseIdle or holdMember recorded it a moment ago, on this replica).
    await this.holders.rememberPool(lease.pool, now);
    // Held past the lease's last deadline is enough: by then the reaper has ended it.
    if (!this.holders.holdCovers(lease.pool, lease.workspace, lifetimeEnd(lease), now)) {
      const hold = { workspace: lease.workspace, until: leaseEnd(lease), now };
      await this.commands.script(
        "hold-workspace",
        [keys.holders(lease.pool)],
        [hold.workspace, Math.ceil(hold.until), hold.now],
      );
      this.holders.rememberHold(lease.pool, hold);
    }
    await this.commands.script(
      "put-lease",
      [keys.lease(lease), keys.deadlines(lease.workspace)],
      [JSON.stringify(lease), Math.ceil(leaseEnd(lease)), leaseDeadline(lease), lease.sessionId],
    );
  }

  async getLease(key: LeaseKey) {
    const { redis, keys } = this.commands;
    const raw = await this.commands.read(() => redis.get(keys.lease(key)));
    return raw ? (JSON.parse(raw) as Lease) : undefined;
  }

  async touchLease(key: LeaseKey, now: number, call?: CallMark) {
    const { keys } = this.commands;
    const mark = !call ? ["", ""] : "begin" in call ? ["begin", call.begin] : ["end", ""];
    const raw = await this.commands.script(
      "touch-lease",
      [keys.lease(key), keys.deadlines(key.workspace)],
      [now, ...mark, key.sessionId],
    );
    return typeof raw === "string" ? (JSON.parse(raw) as Lease) : undefined;
  }

  async beginCall(key: LeaseKey, start: CallStart): Promise<CallStarted> {
    const { keys } = this.commands;
    const budget = start.budget;
    // The workspace's ends this replica put off ride with this begin, ahead of it.
    const ends = this.ends.take(key.workspace);
    let reply: [string, string?, string?, number?];
    try {
      reply = (await this.commands.scriptCarryingDeferred(
        CALL_STEPS_SCRIPT,
        [
          ...ends.keys,
          keys.lease(key),
          // Some key of the workspace's slot when there is no budget to reserve.
          budget ? keys.budget(key.workspace, budget.day) : keys.slots(key.workspace),
        ],
        [
          ...ends.args,
          start.now,
          Math.ceil(start.busyUntil),
          budget ? Math.max(1, Math.ceil(budget.requestedMs)) : 0,
          budget?.limitMs ?? 0,
          BUDGET_KEY_TTL_MS,
          key.sessionId,
        ],
      )) as typeof reply;
    } catch (error) {
      ends.fail(error);
      throw error;
    }
    const [found, outcome, raw, granted] = reply;
    ends.settle(found);
    if (outcome === "started") {
      return { outcome, lease: JSON.parse(raw!) as Lease, grantedMs: Number(granted) };
    }
    return { outcome: outcome === "spent" ? "budget_spent" : outcome === "expired" ? "expired" : "gone" };
  }

  /** Put off until the workspace's next begin on this replica, or a moment (redis-call-ends.ts). */
  endCall(key: LeaseKey, end: CallEnd) {
    return this.ends.end(key, end);
  }

  /** Sends the ends put off and waits for them (before the connection closes). */
  flushEnds() {
    return this.ends.flush();
  }

  async takeLease(key: LeaseKey) {
    const { redis, keys } = this.commands;
    const raw = await this.commands.script(
      "take-lease",
      [keys.lease(key), keys.deadlines(key.workspace)],
      [key.sessionId],
    );
    if (this.legacyIndexInUse) {
      await this.commands.call(() => redis.zrem(keys.legacyLeaseIndex(), keys.indexMember(key)));
    }
    return typeof raw === "string" ? (JSON.parse(raw) as Lease) : undefined;
  }

  async dueLeases(now: number, limit: number) {
    const { redis, keys } = this.commands;
    const due = new Map<string, LeaseKey>();
    const add = (key: LeaseKey) => due.set(JSON.stringify([key.workspace, key.sessionId]), key);
    for (const key of await this.legacyMembers("-inf", now, limit)) add(key);
    const workspaces = await this.holders.workspacesWithLeases(now);
    for (let i = 0; i < workspaces.length && due.size < limit; i += LIST_CONCURRENCY) {
      const batch = workspaces.slice(i, i + LIST_CONCURRENCY);
      const found = await Promise.all(
        batch.map((workspace) =>
          this.commands.read(() =>
            redis.zrangebyscore(keys.deadlines(workspace), "-inf", now, "LIMIT", 0, limit),
          ),
        ),
      );
      found.forEach((sessions, j) => {
        for (const sessionId of sessions) add({ workspace: batch[j]!, sessionId });
      });
    }
    return [...due.values()].slice(0, limit);
  }

  async listLeases() {
    const { redis, keys } = this.commands;
    const now = Date.now();
    const byWorkspace = new Map<string, Set<string>>();
    const add = (key: LeaseKey) => {
      const sessions = byWorkspace.get(key.workspace) ?? new Set<string>();
      sessions.add(key.sessionId);
      byWorkspace.set(key.workspace, sessions);
    };
    for (const key of await this.legacyMembers("-inf", "+inf")) add(key);
    const workspaces = await this.holders.workspacesWithLeases(now);
    for (let i = 0; i < workspaces.length; i += LIST_CONCURRENCY) {
      const batch = workspaces.slice(i, i + LIST_CONCURRENCY);
      const found = await Promise.all(
        batch.map((workspace) =>
          this.commands.read(() => redis.zrange(keys.deadlines(workspace), "0", "-1")),
        ),
      );
      found.forEach((sessions, j) => {
        for (const sessionId of sessions) add({ workspace: batch[j]!, sessionId });
      });
    }
    const leases: Lease[] = [];
    const entries = [...byWorkspace.entries()];
    for (let i = 0; i < entries.length; i += LIST_CONCURRENCY) {
      await Promise.all(
        entries.slice(i, i + LIST_CONCURRENCY).map(async ([workspace, set]) => {
          const sessions = [...set];
          // One workspace's keys share a slot: one MGET each.
          const raws = await this.commands.read(() =>
            redis.mget(sessions.map((sessionId) => keys.lease({ workspace, sessionId }))),
          );
          const stale: string[] = [];
          raws.forEach((raw, j) => {
            if (raw) leases.push(JSON.parse(raw) as Lease);
            else stale.push(sessions[j]!);
          });
          // Hints whose lease is gone (it aged out without being taken).
          if (stale.length > 0) {
            await this.commands.call(() => redis.zrem(keys.deadlines(workspace), ...stale));
          }
        }),
      );
    }
    return leases;
  }

  private async legacyMembers(min: number | string, max: number | string, limit?: number) {
    if (!this.legacyIndexInUse) return [];
    const { redis, keys } = this.commands;
    const index = keys.legacyLeaseIndex();
    const members = await this.commands.read(() =>
      limit === undefined
        ? redis.zrangebyscore(index, min, max)
        : redis.zrangebyscore(index, min, max, "LIMIT", "0", String(limit)),
    );
    if (members.length === 0 && (await this.commands.read(() => redis.zcard(index))) === 0) {
      this.legacyIndexInUse = false; // nothing writes it any more: it stays empty
    }
    return members.map((member) => keys.parseIndexMember(member));
  }
}
