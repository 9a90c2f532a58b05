/**
 * Every Redis key sandpool uses, in one place. The part in braces is the Cluster hash
 * tag: all keys of one workspace (or one pool) share a slot, so a script that touches
 * several of them still runs on one node.
 */
import type { LeaseKey } from "../records.js";

/** How long a day's budget counter is kept from its first reservation: past the end of its day. */
export const BUDGET_KEY_TTL_MS = 2 * 86_400_000;
/** How long a session's end mark stops late CPU readings of it: longer than a meter round can take. */
export const CPU_END_MARK_MS = 10 * 60_000;

export class RedisKeys {
  constructor(private readonly prefix: string) {}

  slots(workspace: string): string {
    return `${this.prefix}{ws:${workspace}}:slots`;
  }

  rate(workspace: string): string {
    return `${this.prefix}{ws:${workspace}}:rate`;
  }

  budget(workspace: string, day: string): string {
    return `${this.prefix}{ws:${workspace}}:budget:${day}`;
  }

  /** The day's CPU total of the workspace's sandboxes (ms). */
  cpuDay(workspace: string, day: string): string {
    return `${this.prefix}{ws:${workspace}}:cpu:${day}`;
  }

  /** A session's end, for the CPU meter: a reading of it arriving later charges nothing. */
  cpuEnded(workspace: string, sessionId: string): string {
    return `${this.prefix}{ws:${workspace}}:cpu-ended:${sessionId}`;
  }

  /** The last CPU reading of each of the workspace's sessions (ms). */
  cpuReadings(workspace: string): string {
    return `${this.prefix}{ws:${workspace}}:cpu-readings`;
  }

  lease(key: LeaseKey): string {
    return `${this.prefix}{ws:${key.workspace}}:lease:${key.sessionId}`;
  }

  /**
   * The replicas that may hold a copy of a lease in their lease cache (a set of replica ids,
   * expiring with the lease): whether a session's end must close its sandbox session before
   * it answers (redis-leases.ts `takeLease`).
   */
  leaseCopies(key: LeaseKey): string {
    return `${this.prefix}{ws:${key.workspace}}:lease-copies:${key.sessionId}`;
  }

  /** A workspace's usage backlog: usage records oldest first (../usage-backlog.ts). */
  usage(workspace: string): string {
    return `${this.prefix}{ws:${workspace}}:usage`;
  }

  /** A workspace's claimed usage batch, written to Postgres by the drainer holding its claim. */
  usageClaimed(workspace: string): string {
    return `${this.prefix}{ws:${workspace}}:usage-claimed`;
  }

  /** Whose a workspace's claimed usage batch is: a drainer's token, expiring. */
  usageClaim(workspace: string): string {
    return `${this.prefix}{ws:${workspace}}:usage-claim`;
  }

  /**
   * Workspaces whose usage backlog a drain could not empty: listed for the drainers after
   * their leases (and so their pools' holder sets, the usual way in) are gone.
   */
  usageWaiting(): string {
    return `${this.prefix}{usage}:waiting`;
  }

  members(pool: string): string {
    return `${this.prefix}{pool:${pool}}:members`;
  }

  idle(pool: string): string {
    return `${this.prefix}{pool:${pool}}:idle`;
  }

  /** A pool's sandboxes parked for their workspace's next session (JSON records, newest first). */
  parked(pool: string): string {
    return `${this.prefix}{pool:${pool}}:parked`;
  }

  /** A pool's warm-up starts under way, sandbox id -> expiry: what a lease at the cap waits for. */
  warming(pool: string): string {
    return `${this.prefix}{pool:${pool}}:warming`;
  }

  /** A pool's sandboxes whose session ended, waiting to be destroyed, sandbox id -> expiry. */
  retiring(pool: string): string {
    return `${this.prefix}{pool:${pool}}:retiring`;
  }

  /**
   * A pool's starts and hand-outs in flight, sandbox id -> when the mark lapses unless the
   * replica doing it renews it: what reconciliation reclaims from a replica that died.
   */
  inFlight(pool: string): string {
    return `${this.prefix}{pool:${pool}}:inflight`;
  }

  /** Every replica's lease and start counts of a pool, summed (src/pool/pool-demand-sync.ts). */
  demand(pool: string): string {
    return `${this.prefix}{pool:${pool}}:demand`;
  }

  /** A pool's recent refill times, newest first. */
  refills(pool: string): string {
    return `${this.prefix}{pool:${pool}}:refills`;
  }

  /**
   * A workspace's leases, session id -> deadline: what the reaper scans. Under the
   * workspace's tag, so the scripts of a call move it in the same step as the lease.
   */
  deadlines(workspace: string): string {
    return `${this.prefix}{ws:${workspace}}:deadlines`;
  }

  /**
   * A workspace's running sessions, session id -> quiet since (records.ts `quietSince`):
   * what automatic hibernation reads. Moved by the same scripts as the deadline index; a
   * session leaves it as it starts hibernating and comes back as it runs again.
   */
  quiet(workspace: string): string {
    return `${this.prefix}{ws:${workspace}}:quiet`;
  }

  /** The workspaces holding sandboxes of a pool, workspace -> until (the reaper's way in). */
  holders(pool: string): string {
    return `${this.prefix}{pool:${pool}}:holders`;
  }

  /** The names of the pools that ever started a sandbox. */
  pools(): string {
    return `${this.prefix}pools`;
  }

  /**
   * The deadline index of earlier versions (every lease in one set, outside any workspace's
   * slot): read by the reaper and the listings, never written, until its leases are gone.
   */
  legacyLeaseIndex(): string {
    return `${this.prefix}{leases}:deadlines`;
  }

  /** A lease's member in the legacy index. */
  indexMember(key: LeaseKey): string {
    return JSON.stringify([key.workspace, key.sessionId]);
  }

  parseIndexMember(member: string): LeaseKey {
    const [workspace, sessionId] = JSON.parse(member) as [string, string];
    return { workspace, sessionId };
  }

  channel(name: string): string {
    return `${this.prefix}${name}`;
  }
}
