/**
 * Deployments from before the per-workspace index kept one global deadline index
 * (`{leases}:deadlines`): it is still read by the listings and emptied as leases are taken,
 * until nothing is left in it; from then on it is not read again.
 */
import type { LeaseKey } from "../records.js";
import type { RedisCommands } from "./redis-commands.js";

export class LegacyLeaseIndex {
  /** Whether the index had entries when last read. */
  private inUse = true;

  constructor(private readonly commands: RedisCommands) {}

  /** The index's entries scored from `min` to `max` (at most `limit`), as lease keys. */
  async members(min: number | string, max: number | string, limit?: number) {
    if (!this.inUse) return [];
    const { redis, keys } = this.commands;
    const index = keys.legacyLeaseIndex();
    const members = await this.commands.read(() =>
      limit === undefined
        ? redis.zrangebyscore(index, min, max)
        : redis.zrangebyscore(index, min, max, "LIMIT", "0", String(limit)),
    );
    if (members.length === 0 && (await this.commands.read(() => redis.zcard(index))) === 0) {
      this.inUse = false; // nothing writes it any more: it stays empty
    }
    return members.map((member) => keys.parseIndexMember(member));
  }

  /** Drops a taken lease's entry, while the index is in use. */
  async forget(key: LeaseKey): Promise<void> {
    if (!this.inUse) return;
    const { redis, keys } = this.commands;
    await this.commands.call(() => redis.zrem(keys.legacyLeaseIndex(), keys.indexMember(key)));
  }
}
