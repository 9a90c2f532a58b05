/**
 * This replica's copies of the leases its calls found, so a session's next call can start
 * without waiting on Redis (redis-leases.ts). Keyed by workspace and session id together:
 * a call of one workspace can never find another's entry.
 *
 * Coherence: an entry is dropped on this replica when any replica ends the session (the
 * `leases-ended` broadcast, sent by the one that took the lease), and the whole cache is
 * unused and emptied while the broadcast's connection is down (an end said then would be
 * missed). An entry is also trusted for `TTL_MS` at most, and never close to its session's
 * idle or lifetime deadline: the awaited path decides those.
 *
 * What a stale entry can still do in the moment between one replica's end and the message
 * reaching another: forward a call to the session's sandbox, which by then has closed the
 * session, so the call is the session's 404 (src/forward/sandbox-forwarder.ts). Redis
 * records which replicas took a copy (the lease's copies, redis-keys.ts), and an end that
 * finds any other than its own closes the sandbox session before it answers
 * (session-lifecycle.ts); one that finds only its own, already dropped, need not wait.
 */
import type { Lease, LeaseKey } from "../records.js";

/** How long an entry is trusted without a round trip to Redis. */
export const LEASE_CACHE_TTL_MS = 5_000;
/** An entry is not used when its session's idle or lifetime deadline is this close. */
export const LEASE_CACHE_MARGIN_MS = 5_000;
/** Entries kept at most; the oldest go first. */
const MAX_ENTRIES = 20_000;

interface Entry {
  lease: Lease;
  cachedAt: number;
}

const entryKey = (key: LeaseKey) => `${key.workspace}\u0000${key.sessionId}`;

/**
 * When the session idles out or reaches its lifetime if no call marks it busy (busyUntil
 * left out: this replica's copy does not see other replicas' calls end).
 */
function quietDeadline(lease: Lease): number {
  return Math.min(
    lease.lastActivityAt + lease.idleTimeoutSeconds * 1000,
    lease.createdAt + lease.maxLifetimeSeconds * 1000,
  );
}

export class LeaseCache {
  private readonly entries = new Map<string, Entry>();
  /**
   * Sessions ended lately, by when they were heard of: a begin's reply that set out before
   * the end and arrives after it must not bring the lease back.
   */
  private readonly ended = new Map<string, number>();
  /** False while an end could be missed: nothing is served from the cache then. */
  private coherent = false;

  /** The lease of `key` when it may serve a call starting at `now`, else undefined. */
  usable(key: LeaseKey, now: number): Lease | undefined {
    if (!this.coherent) return undefined;
    const entry = this.entries.get(entryKey(key));
    if (!entry) return undefined;
    if (
      now - entry.cachedAt > LEASE_CACHE_TTL_MS ||
      quietDeadline(entry.lease) - now < LEASE_CACHE_MARGIN_MS
    ) {
      return undefined;
    }
    return entry.lease;
  }

  /** Keeps the lease as Redis returned it (after a begin, or as it was written). */
  put(lease: Lease, now: number): void {
    if (!this.coherent) return;
    const key = entryKey(lease);
    if (this.ended.has(key)) return;
    this.entries.delete(key); // re-inserted last: the map stays in the order entries were cached
    this.entries.set(key, { lease, cachedAt: now });
    // Entries past their lifetime, from the oldest, and any beyond the cap.
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= MAX_ENTRIES && now - entry.cachedAt <= LEASE_CACHE_TTL_MS) break;
      this.entries.delete(oldest);
    }
  }

  /** Records a call's begin or end on the copy (its activity, for the deadline check). */
  touch(key: LeaseKey, now: number): void {
    const entry = this.entries.get(entryKey(key));
    if (entry && now > entry.lease.lastActivityAt) entry.lease.lastActivityAt = now;
  }

  /** The copy goes: the lease was found gone or changed. */
  drop(key: LeaseKey): void {
    this.entries.delete(entryKey(key));
  }

  /** The session ended (on any replica): its copy goes, and none is kept for a while. */
  forget(key: LeaseKey, now: number): void {
    const id = entryKey(key);
    this.entries.delete(id);
    this.ended.delete(id);
    this.ended.set(id, now);
    for (const [oldest, at] of this.ended) {
      if (now - at <= LEASE_CACHE_TTL_MS) break;
      this.ended.delete(oldest);
    }
  }

  /** Stops using the cache (the broadcast is down) or starts afresh; either way empties it. */
  setCoherent(coherent: boolean): void {
    this.coherent = coherent;
    this.entries.clear();
  }
}
