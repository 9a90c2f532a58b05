/**
 * Which workspaces hold sandboxes of which pools: the pools set (`{pools}`) and each pool's
 * holder set (`{pool:P}:holders`), written when a sandbox is leased. The lease listings and
 * the reaper start from them, since leases live under their workspace's hash tag and no
 * single key names them all. What this replica wrote itself lately is remembered, so the
 * hot path does not write it again.
 */
import type { MemberHold } from "../records.js";
import type { RedisCommands } from "./redis-commands.js";

/** How long this replica trusts what it wrote itself (a workspace's hold). */
const REMEMBERED_MS = 60_000;
/** A pool's name is written with every sandbox it starts: trusted longer. */
const POOL_REMEMBERED_MS = 10 * 60_000;
const MAX_REMEMBERED = 10_000;

export class RedisHolders {
  /** Pools known to be in the pools set, and when this replica last wrote them there. */
  private readonly knownPools = new Map<string, number>();
  /** `pool\0workspace` -> [held until, written at]: holds this replica wrote itself. */
  private readonly knownHolds = new Map<string, [number, number]>();

  constructor(private readonly commands: RedisCommands) {}

  /** Adds the pool to the pools set, unless this replica did so lately (or `always`). */
  async rememberPool(pool: string, now: number, always = false): Promise<void> {
    const at = this.knownPools.get(pool);
    if (!always && at !== undefined && now - at < POOL_REMEMBERED_MS) return;
    const { redis, keys } = this.commands;
    await this.commands.call(() => redis.sadd(keys.pools(), pool));
    this.knownPools.set(pool, now);
  }

  /** Notes a hold this replica just wrote (by a script: lease-idle, hold-member, hold-workspace). */
  rememberHold(pool: string, hold: MemberHold): void {
    const id = `${pool}\u0000${hold.workspace}`;
    const known = this.knownHolds.get(id);
    if (!known && this.knownHolds.size >= MAX_REMEMBERED) {
      this.knownHolds.delete(this.knownHolds.keys().next().value!);
    }
    this.knownHolds.set(id, [Math.max(hold.until, known?.[0] ?? 0), hold.now]);
  }

  /** Whether this replica lately recorded `workspace` as holding `pool` until `until` or later. */
  holdCovers(pool: string, workspace: string, until: number, now: number): boolean {
    const known = this.knownHolds.get(`${pool}\u0000${workspace}`);
    return known !== undefined && known[0] >= until && now - known[1] < REMEMBERED_MS;
  }

  /** Workspaces holding a sandbox of some pool now: where leases may be. */
  async workspacesWithLeases(now: number): Promise<string[]> {
    const { redis, keys } = this.commands;
    const pools = await this.commands.read(() => redis.smembers(keys.pools()));
    const holders = await Promise.all(
      pools.map((pool) =>
        this.commands.read(() => redis.zrangebyscore(keys.holders(pool), `(${now}`, "+inf")),
      ),
    );
    return [...new Set(holders.flat())];
  }
}
