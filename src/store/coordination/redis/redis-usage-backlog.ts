/**
 * The usage backlog on Redis (../usage-backlog.ts): per workspace, under its hash tag, the
 * queue of usage records (`{ws:W}:usage`, appended by the scripts that end calls and put
 * and take leases, lua/call-steps-n.lua, put-lease-5.lua, take-lease-5.lua), the batch a
 * drainer claimed (`:usage-claimed`) and its claim (`:usage-claim`). The drainers find the
 * workspaces from the pools' holder sets (where leases may be: a workspace holds a pool for
 * a while after its sessions end, redis-holders.ts) and from `{usage}:waiting`, the
 * workspaces a drain could not empty, so a backlog that outlasts its workspace's holds
 * (Postgres away for long) is still found.
 */
import type { ClaimedUsage, UsageBacklog, UsageBacklogSize, UsageClaim } from "../usage-backlog.js";
import type { RedisCommands } from "./redis-commands.js";
import type { RedisHolders } from "./redis-holders.js";

export class RedisUsageBacklog implements Omit<UsageBacklog, "flushCallEnds"> {
  constructor(
    private readonly commands: RedisCommands,
    private readonly holders: RedisHolders,
  ) {}

  async appendUsage(workspace: string, records: readonly string[]): Promise<void> {
    if (records.length === 0) return;
    const { redis, keys } = this.commands;
    await this.commands.call(() => redis.rpush(keys.usage(workspace), ...records));
  }

  async claimUsage(workspace: string, claim: UsageClaim): Promise<ClaimedUsage> {
    const { keys } = this.commands;
    const [outcome, ...records] = (await this.commands.script(
      "claim-usage",
      [keys.usage(workspace), keys.usageClaimed(workspace), keys.usageClaim(workspace)],
      [claim.token, Math.max(1, Math.floor(claim.max)), Math.max(1, Math.ceil(claim.claimMs))],
    )) as string[];
    return outcome === "busy" ? { outcome: "busy" } : { outcome: "claimed", records };
  }

  async ackUsage(workspace: string, token: string): Promise<boolean> {
    const { keys } = this.commands;
    const acked = await this.commands.script(
      "ack-usage",
      [keys.usageClaimed(workspace), keys.usageClaim(workspace)],
      [token],
    );
    return Number(acked) === 1;
  }

  async usageWorkspaces(now: number): Promise<string[]> {
    const { redis, keys } = this.commands;
    const [holding, waiting] = await Promise.all([
      this.holders.workspacesWithLeases(now),
      this.commands.read(() => redis.smembers(keys.usageWaiting())),
    ]);
    return [...new Set([...holding, ...waiting])];
  }

  async usageBacklogSize(workspace: string): Promise<UsageBacklogSize> {
    const { redis, keys } = this.commands;
    const [claimed, queued, firstClaimed, firstQueued] = await this.commands.read(() =>
      Promise.all([
        redis.llen(keys.usageClaimed(workspace)),
        redis.llen(keys.usage(workspace)),
        redis.lindex(keys.usageClaimed(workspace), 0),
        redis.lindex(keys.usage(workspace), 0),
      ]),
    );
    const oldest = firstClaimed ?? firstQueued ?? undefined;
    return { records: claimed + queued, ...(oldest === undefined ? {} : { oldest }) };
  }

  async markUsageWaiting(workspace: string, waiting: boolean): Promise<void> {
    const { redis, keys } = this.commands;
    await this.commands.call(() =>
      waiting ? redis.sadd(keys.usageWaiting(), workspace) : redis.srem(keys.usageWaiting(), workspace),
    );
  }
}
