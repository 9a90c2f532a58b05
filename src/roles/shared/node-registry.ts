/**
 * The registry of nodes in Redis: each node renews its entry every heartbeat (id, URL,
 * capacity, images, isolation levels, free warm sandboxes per pool, leased count); edges read it to place
 * sessions and to notice a node that stopped. Draining is an operator's flag kept apart
 * from the entry, so a heartbeat cannot undo it. Every key is tagged `{nodes}`: one Cluster
 * slot for the whole registry, which is small (one entry per sandbox host).
 */
import type { z } from "zod";
import type { LuaScripts } from "../../store/coordination/redis/lua-scripts.js";
import type { RedisClient } from "../../store/coordination/redis/redis-connection.js";
import type { nodeViewSchema } from "./node-view-schema.js";

/** What a node says about itself on each heartbeat, and what the registry makes of it (node-view-schema.ts). */
export type NodeView = z.output<typeof nodeViewSchema>;
export type NodeState = NodeView["state"];
export type NodeAdvert = Omit<NodeView, "state" | "draining" | "heartbeatAt">;

export interface NodeRegistryOptions {
  prefix: string;
  lostAfterMs: number;
}

/** An entry outlives a node's silence long enough for an operator to see it lost. */
const ENTRY_KEPT_MS = 10 * 60_000;

export class NodeRegistry {
  private readonly beats: string;
  private readonly drainingKey: string;
  private readonly claimedKey: string;

  constructor(
    private readonly redis: RedisClient,
    private readonly scripts: LuaScripts,
    private readonly options: NodeRegistryOptions,
  ) {
    this.beats = `${options.prefix}{nodes}:beats`;
    this.drainingKey = `${options.prefix}{nodes}:draining`;
    this.claimedKey = `${options.prefix}{nodes}:claimed`;
    scripts.defineOn(redis);
  }

  private entryKey(id: string): string {
    return `${this.options.prefix}{nodes}:entry:${id}`;
  }

  /** Renews the node's entry; returns whether an operator has it draining. */
  async heartbeat(advert: NodeAdvert, now = Date.now()): Promise<{ draining: boolean }> {
    const results = await this.redis
      .multi()
      .set(this.entryKey(advert.id), JSON.stringify({ ...advert, heartbeatAt: now }), "PX", ENTRY_KEPT_MS)
      .zadd(this.beats, now, advert.id)
      .sismember(this.drainingKey, advert.id)
      .exec();
    const draining = results?.[2]?.[1];
    return { draining: draining === 1 };
  }

  /** Every node with an entry: ready, draining, or lost (silent past `lostAfterMs`). */
  async list(now = Date.now()): Promise<NodeView[]> {
    const [beats, draining] = await Promise.all([
      this.redis.zrange(this.beats, "0", "-1", "WITHSCORES"),
      this.redis.smembers(this.drainingKey),
    ]);
    const heartbeatOf = new Map<string, number>();
    for (let i = 0; i < beats.length; i += 2) heartbeatOf.set(beats[i]!, Number(beats[i + 1]));
    const ids = [...heartbeatOf.keys()];
    const entries = ids.length > 0 ? await this.redis.mget(ids.map((id) => this.entryKey(id))) : [];
    const drained = new Set(draining);
    const views: NodeView[] = [];
    entries.forEach((raw, index) => {
      if (!raw) return;
      const advert = JSON.parse(raw) as NodeAdvert & { heartbeatAt: number };
      const heartbeatAt = heartbeatOf.get(ids[index]!) ?? advert.heartbeatAt;
      const isDraining = drained.has(advert.id);
      const lost = heartbeatAt < now - this.options.lostAfterMs;
      views.push({
        ...advert,
        heartbeatAt,
        draining: isDraining,
        state: lost ? "lost" : isDraining ? "draining" : "ready",
      });
    });
    return views.sort((a, b) => a.id.localeCompare(b.id));
  }

  /** One node's view, if it has an entry. */
  async get(id: string, now = Date.now()): Promise<NodeView | undefined> {
    return (await this.list(now)).find((view) => view.id === id);
  }

  /**
   * Claims a lost node for the caller alone (of every edge that noticed, one gets it and ends
   * its sessions). False when another claimed it, or it heart-beat meanwhile.
   */
  async claimLost(id: string, now = Date.now()): Promise<boolean> {
    const claimed = await this.scripts.run(
      this.redis,
      "claim-lost-node",
      [this.beats, this.claimedKey],
      [id, now - this.options.lostAfterMs],
    );
    return claimed === 1;
  }

  /** Forgets a node (an operator's removal of one that will not return). */
  async forget(id: string): Promise<void> {
    await this.redis
      .multi()
      .del(this.entryKey(id))
      .zrem(this.beats, id)
      .srem(this.drainingKey, id)
      .hdel(this.claimedKey, id)
      .exec();
  }

  /** Sets or clears an operator's drain; false when no such node has an entry. */
  async setDraining(id: string, draining: boolean): Promise<boolean> {
    if ((await this.redis.exists(this.entryKey(id))) === 0) return false;
    if (draining) await this.redis.sadd(this.drainingKey, id);
    else await this.redis.srem(this.drainingKey, id);
    return true;
  }
}
