/**
 * What a node holds: its warm pools (one NodeWarmPool per configured pool, sized to this
 * node's share, all topped up by one warm-pool engine: src/pool/warm-pool-engine.ts) and the sandboxes leased out of them, by sandbox id. A lease borrows a
 * sandbox for one workspace, and only calls made for that workspace reach it (`heldFor`);
 * its session's end (the edge's destroy) destroys it, or (the edge's recycle) parks it,
 * scrubbed, for that workspace's next lease here (node-parking.ts). After a restart the held map is
 * rebuilt from the store's live leases (reconcile): what no live lease holds goes.
 */
import type { Logger } from "pino";
import { SandpoolError } from "../../contract/error-codes.js";
import type { SandboxClient } from "../../forward/sandbox-client.js";
import type { Isolation } from "../../policy-schema/isolation-levels.js";
import { WarmPoolEngine } from "../../pool/warm-pool-engine.js";
import { WarmupLimiter } from "../../pool/warmup-limiter.js";
import type { PoolSpec, SandboxRuntime, SandboxUsage } from "../../runtime/sandbox-runtime.js";
import type { LeaseStore } from "../../store/coordination/lease-store.js";
import type { SandboxRecord } from "../../store/coordination/records.js";
import type { NodeAdvert } from "../shared/node-registry.js";
import { NodeParking } from "./node-parking.js";
import { NodeWarmPool } from "./node-warm-pool.js";
import { poolShare } from "./pool-share.js";

export interface NodeSandboxesDeps {
  pools: readonly PoolSpec[];
  runtime: SandboxRuntime;
  client: SandboxClient;
  store: LeaseStore;
  log: Logger;
  nodeId: string;
  url: string;
}

export class NodeSandboxes {
  private readonly warm = new Map<string, NodeWarmPool>();
  private readonly leased = new Map<string, SandboxRecord>();
  /** The workspace each held sandbox was leased to: every call on it must be made for it. */
  private readonly leasedTo = new Map<string, string>();
  /** When each was leased (or adopted): a lease is recorded by the edge just after. */
  private readonly leasedAt = new Map<string, number>();
  private readonly parking: NodeParking;
  draining = false;
  /** Sandboxes being restored from a checkpoint (node-hibernation.ts): not leftovers. */
  readonly restoring = new Set<string>();

  constructor(private readonly deps: NodeSandboxesDeps) {
    // One engine for the node's pools, as for one host's: they share its Docker engine and CPUs.
    const engine = new WarmPoolEngine({ log: deps.log, limiter: new WarmupLimiter() });
    for (const pool of deps.pools) {
      // Nothing is started before the first reconciliation and heartbeat size the share.
      const share = { min: 0, max: poolShare(pool, 1, 0).max };
      this.warm.set(pool.name, new NodeWarmPool(pool, share, { ...deps, engine }));
    }
    this.parking = new NodeParking({
      pools: this.warm,
      runtime: deps.runtime,
      client: deps.client,
      log: deps.log,
      held: (sandboxId) => this.leased.get(sandboxId),
      release: (sandboxId) => this.unhold(sandboxId),
    });
  }

  /** Sizes every pool to this node's share among `readyNodes` ready nodes (itself included). */
  resize(readyNodes: number, rank: number): void {
    for (const pool of this.warm.values()) {
      const share = poolShare(pool.spec, readyNodes, rank);
      // A draining node keeps no warm sandboxes: its leased ones finish, then it is empty.
      pool.resize(this.draining ? { min: 0, max: share.max } : share);
      if (this.draining && pool.free > 0) {
        pool
          .destroyIdle()
          .catch((error) => this.deps.log.warn({ err: error }, "could not empty a draining pool"));
      }
      if (this.draining && pool.parked > 0) {
        pool
          .destroyParked()
          .catch((error) => this.deps.log.warn({ err: error }, "could not empty a draining pool"));
      }
    }
  }

  /**
   * A sandbox for one session of `workspace`: its own parked here first (unless `reuse` is
   * false: its policy turns reuse off), else a warm one, else a cold start.
   */
  async lease(
    poolName: string,
    workspace: string,
    options: { reuse?: boolean } = {},
  ): Promise<{ record: SandboxRecord; warm: boolean; reused: boolean }> {
    if (this.draining) {
      throw new SandpoolError("capacity.exhausted", "this node is draining", { retryAfterSeconds: 1 });
    }
    const pool = this.warm.get(poolName);
    if (!pool) throw new SandpoolError("capacity.exhausted", `this node serves no pool '${poolName}'`);
    const parked = options.reuse === false ? undefined : await this.parking.take(poolName, workspace);
    if (parked) {
      this.hold(parked, workspace);
      return { record: parked, warm: true, reused: true };
    }
    const leased = await pool.acquire();
    this.hold(leased.record, workspace);
    return { ...leased, reused: false };
  }

  /**
   * The edge's recycle of a held sandbox whose session ended: scrubbed and parked for
   * `workspace`'s next lease here, true; else (a draining node parks nothing, a sandbox past
   * its bounds, a failed scrub) destroyed here, false.
   */
  async recycle(record: SandboxRecord, workspace: string): Promise<boolean> {
    // Its lease is gone already: the reconciliation's grace starts again for the scrub.
    this.leasedAt.set(record.sandboxId, Date.now());
    const parked = !this.draining && (await this.parking.park(record, workspace));
    if (parked) return true;
    await this.destroy(record.sandboxId).catch((error: unknown) =>
      this.deps.log.warn({ err: error, sandbox: record.sandboxId }, "could not destroy an unparked sandbox"),
    );
    return false;
  }

  /** The sandbox when it is held here for `workspace`; any other workspace is told nothing of it. */
  heldFor(sandboxId: string, workspace: string | undefined): SandboxRecord | undefined {
    if (workspace === undefined || this.leasedTo.get(sandboxId) !== workspace) return undefined;
    return this.leased.get(sandboxId);
  }

  /** Whether the sandbox is held here at all (for whichever workspace). */
  holds(sandboxId: string): boolean {
    return this.leased.has(sandboxId);
  }

  async destroy(sandboxId: string): Promise<void> {
    const record = this.leased.get(sandboxId);
    if (!record) return;
    this.unhold(sandboxId);
    const pool = this.warm.get(record.pool);
    await (pool ? pool.destroy(record) : this.deps.runtime.destroy(record.runtimeId));
  }

  async usage(record: SandboxRecord): Promise<SandboxUsage | undefined> {
    if (!this.deps.runtime.usage) return undefined;
    return this.deps.runtime.usage(record.runtimeId).catch(() => undefined);
  }

  private unhold(sandboxId: string): void {
    this.leased.delete(sandboxId);
    this.leasedTo.delete(sandboxId);
    this.leasedAt.delete(sandboxId);
  }

  /**
   * A sandbox `restore` starts for a workspace (a memory checkpoint's new container), held as
   * a lease of the pool's: it counts against this node's share like any lease, and its
   * destroy frees the place. 503 capacity.exhausted, nothing started, when the share is full.
   */
  async holdRestored(
    poolName: string,
    workspace: string,
    restore: () => Promise<SandboxRecord>,
  ): Promise<SandboxRecord> {
    const pool = this.warm.get(poolName);
    if (!pool) throw new SandpoolError("capacity.exhausted", `this node serves no pool '${poolName}'`);
    const record = await pool.holdRestored(restore);
    this.hold(record, workspace);
    return record;
  }

  private hold(record: SandboxRecord, workspace: string): void {
    this.leased.set(record.sandboxId, record);
    this.leasedTo.set(record.sandboxId, workspace);
    this.leasedAt.set(record.sandboxId, Date.now());
  }

  /**
   * Compares the engine with the store: a sandbox a live lease names (on this node) is held
   * again, any other sandbox of this deployment on the engine is destroyed, unless the warm
   * pools made it. Run at start-up, before the node advertises itself, and periodically.
   */
  async reconcile(): Promise<{ adopted: number; destroyed: number }> {
    // A hibernated session holds no sandbox: a container left under its old id is a leftover.
    const leases = (await this.deps.store.listLeases()).filter(
      (lease) => lease.node === this.deps.nodeId && lease.hibernation?.phase !== "saved",
    );
    const bySandbox = new Map(leases.map((lease) => [lease.sandbox.sandboxId, lease]));
    const warmIds = new Set<string>();
    for (const pool of this.warm.values()) for (const id of pool.knownIds()) warmIds.add(id);
    let adopted = 0;
    let destroyed = 0;
    const listed = await this.deps.runtime.list();
    await this.deps.runtime.tidy?.(listed);
    for (const sandbox of listed) {
      if (warmIds.has(sandbox.sandboxId) || this.leased.has(sandbox.sandboxId)) continue;
      if (this.restoring.has(sandbox.sandboxId)) continue;
      const lease = bySandbox.get(sandbox.sandboxId);
      if (lease && sandbox.running !== false) {
        this.hold(lease.sandbox, lease.workspace);
        adopted++;
        continue;
      }
      await this.deps.runtime.destroy(sandbox.runtimeId).catch(() => undefined);
      destroyed++;
    }
    // Held sandboxes whose lease is gone (ended while this node was away) go too.
    // (A minute's grace: an edge records the lease just after the node answers it.)
    for (const sandboxId of this.leased.keys()) {
      if (!bySandbox.has(sandboxId) && Date.now() - (this.leasedAt.get(sandboxId) ?? 0) > 60_000) {
        await this.destroy(sandboxId);
        destroyed++;
      }
    }
    return { adopted, destroyed };
  }

  /** What the node advertises on each heartbeat. */
  advert(images: string[], isolation: Isolation[]): NodeAdvert {
    const capacity: Record<string, number> = {};
    const freeWarm: Record<string, number> = {};
    for (const [name, pool] of this.warm) {
      capacity[name] = pool.max;
      freeWarm[name] = this.draining ? 0 : pool.free;
    }
    return {
      id: this.deps.nodeId,
      url: this.deps.url,
      capacity,
      images,
      isolation,
      freeWarm,
      leased: this.leased.size,
    };
  }

  /** Counts per pool and state, for sandpool_node_sandboxes. */
  counts(): { pool: string; state: "warm" | "leased" | "parked"; count: number }[] {
    const leasedPer = new Map<string, number>();
    for (const record of this.leased.values())
      leasedPer.set(record.pool, (leasedPer.get(record.pool) ?? 0) + 1);
    return [...this.warm.entries()].flatMap(([name, pool]) => [
      { pool: name, state: "warm" as const, count: pool.free },
      { pool: name, state: "leased" as const, count: leasedPer.get(name) ?? 0 },
      { pool: name, state: "parked" as const, count: pool.parked },
    ]);
  }

  async close(): Promise<void> {
    this.parking.close();
    await Promise.all([...this.warm.values()].map((pool) => pool.close()));
  }
}
