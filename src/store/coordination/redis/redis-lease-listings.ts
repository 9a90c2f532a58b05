/**
 * The reads of the Redis leases across workspaces (lease-store.ts): the leases due to be
 * reaped, those quiet enough to hibernate, and every lease. The workspaces are found from
 * the pools' holder sets (redis-holders.ts), then each workspace's indexes are read (a few
 * workspaces at once); an index entry whose lease aged out is dropped as it is found.
 * The legacy global index is read too (redis-legacy-lease-index.ts).
 */
import type { LeaseListings } from "../lease-store.js";
import { type Lease, type LeaseKey, type QuietQuery, quietSince, runsASandbox } from "../records.js";
import type { RedisCommands } from "./redis-commands.js";
import type { RedisHolders } from "./redis-holders.js";
import type { LegacyLeaseIndex } from "./redis-legacy-lease-index.js";

/** Commands sent at once by the listings (one per workspace). */
const LIST_CONCURRENCY = 16;

export class RedisLeaseListings implements LeaseListings {
  constructor(
    private readonly commands: RedisCommands,
    private readonly holders: RedisHolders,
    private readonly legacy: LegacyLeaseIndex,
    /** Writes the steps of calls this replica has put off (redis-call-steps.ts). */
    private readonly flushCallEnds: () => Promise<void>,
  ) {}

  async dueLeases(now: number, limit: number) {
    const { redis, keys } = this.commands;
    const due = new Map<string, LeaseKey>();
    const add = (key: LeaseKey) => due.set(JSON.stringify([key.workspace, key.sessionId]), key);
    for (const key of await this.legacy.members("-inf", now, limit)) add(key);
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

  /**
   * Per workspace with leases: one range read of its quiet index; for a workspace with
   * sessions quiet since `query.latest`, its cutoff, then one MGET of those quiet since it.
   * Each lease read is checked again (an entry can lag a lease written by a replica of an
   * earlier version, which kept no quiet index).
   */
  async quietLeases(query: QuietQuery) {
    const { redis, keys } = this.commands;
    // The calls this replica began or ended and has not written yet count, applied before the
    // read (as for a hibernation step): a session it serves a call on right now is not quiet.
    await this.flushCallEnds();
    const workspaces = await this.holders.workspacesWithLeases(Date.now());
    const found: Lease[] = [];
    const ofWorkspace = async (workspace: string) => {
      const scored = await this.commands.read(() =>
        redis.zrangebyscore(
          keys.quiet(workspace),
          "-inf",
          query.latest,
          "WITHSCORES",
          "LIMIT",
          0,
          query.limit,
        ),
      );
      if (scored.length === 0) return;
      const cutoff = await query.cutoff(workspace);
      if (cutoff === null) return;
      const sessions: string[] = [];
      for (let i = 0; i < scored.length; i += 2) {
        if (Number(scored[i + 1]) <= cutoff) sessions.push(scored[i]!);
      }
      if (sessions.length === 0) return;
      const raws = await this.commands.read(() =>
        redis.mget(sessions.map((sessionId) => keys.lease({ workspace, sessionId }))),
      );
      const gone: string[] = [];
      raws.forEach((raw, j) => {
        const lease = raw ? (JSON.parse(raw) as Lease) : undefined;
        if (!lease) gone.push(sessions[j]!);
        else if (runsASandbox(lease) && quietSince(lease) <= cutoff) found.push(lease);
      });
      // Entries whose lease aged out without being taken (a session id is never used again).
      if (gone.length > 0) await this.commands.call(() => redis.zrem(keys.quiet(workspace), ...gone));
    };
    for (let i = 0; i < workspaces.length; i += LIST_CONCURRENCY) {
      await Promise.all(workspaces.slice(i, i + LIST_CONCURRENCY).map(ofWorkspace));
    }
    return found;
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
    for (const key of await this.legacy.members("-inf", "+inf")) add(key);
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
            await Promise.all(
              [keys.deadlines(workspace), keys.quiet(workspace)].map((index) =>
                this.commands.call(() => redis.zrem(index, ...stale)),
              ),
            );
          }
        }),
      );
    }
    return leases;
  }
}
