/**
 * A node's own warm sandboxes of one pool, in process (warm-set.ts): create and destroy
 * through the runtime, validation on borrow (a warm sandbox that died while idle is
 * destroyed, not leased), min and max, acquire with a deadline (a cold start when none is
 * idle, failing at the pool's start deadline), and idle eviction above min. A sandbox serves
 * one session and is never given back to the pool: a lease borrows it and the session's
 * end destroys it, freeing its place, or parks it for its workspace's next session
 * (node-parking.ts: set aside, still holding its place, lent to that workspace alone). A
 * memory restore's new container holds a place as a lease does (`holdRestored`). min and max
 * are this node's share of the pool across the deployment (pool-share.ts), which changes as
 * nodes come and go (`resize`). Warm-up, the start gate, the start rate and the back-off of a
 * failing image are the warm-pool engine's (src/pool/warm-pool-engine.ts), as on one host:
 * one engine for all of a node's pools, its idle sandboxes kept in the node's memory.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { SandpoolError } from "../../contract/error-codes.js";
import type { SandboxClient } from "../../forward/sandbox-client.js";
import { cpuBaselineMs } from "../../pool/cpu-baseline.js";
import { WarmPoolEngine } from "../../pool/warm-pool-engine.js";
import type { PoolSpec, SandboxRuntime } from "../../runtime/sandbox-runtime.js";
import type { SandboxRecord } from "../../store/coordination/records.js";
import { WarmSet, WarmSetFullError } from "./warm-set.js";

/** Warm sandboxes above min idle longer than this are evicted (their place is free again). */
const IDLE_EVICTION_MS = 10 * 60_000;
const EVICTION_RUN_MS = 30_000;
const HEALTH_TIMEOUT_MS = 2_000;

export interface NodeWarmPoolDeps {
  runtime: SandboxRuntime;
  client: SandboxClient;
  log: Logger;
  nodeId: string;
  /** The node's warm-pool engine, shared by its pools (one of this pool's own without it). */
  engine?: WarmPoolEngine;
}

export class NodeWarmPool {
  private readonly pool: WarmSet<SandboxRecord>;
  /** Sandboxes being started: reconciliation must not take them for leftovers. */
  private readonly starting = new Set<string>();
  /** Warm-up, the start gate, the start rate and the back-off (src/pool/warm-pool-engine.ts). */
  private readonly engine: WarmPoolEngine;

  constructor(
    readonly spec: PoolSpec,
    share: { min: number; max: number },
    private readonly deps: NodeWarmPoolDeps,
  ) {
    this.engine = deps.engine ?? new WarmPoolEngine({ log: deps.log });
    this.pool = new WarmSet<SandboxRecord>(
      {
        create: () => this.start(),
        destroy: (record) => deps.runtime.destroy(record.runtimeId),
        validate: (record) => this.answers(record),
      },
      {
        min: share.min,
        max: share.max,
        // A wait for a place (the share full); a start's turn at the gate is bounded by the
        // engine's startInTurn (startQueueTimeoutMs), not by this.
        acquireTimeoutMs: spec.coldStartTimeoutMs,
        idleEvictionMs: IDLE_EVICTION_MS,
        evictionRunMs: EVICTION_RUN_MS,
        // Logged by the engine, once per back-off step.
        onCreateError: () => undefined,
        warmUp: { engine: this.engine, pool: spec },
      },
    );
  }

  /** Sets this node's share; the pool tops up to the new min at once. */
  resize(share: { min: number; max: number }): void {
    if (this.pool.min === share.min && this.pool.max === Math.max(1, share.max)) return;
    this.pool.resize(share.min, share.max);
  }

  /** A sandbox for one session, warm if one is idle; cold-started within the pool's deadline. */
  async acquire(): Promise<{ record: SandboxRecord; warm: boolean }> {
    const warm = this.pool.available > 0;
    try {
      return { record: await this.pool.acquire(), warm };
    } catch (error) {
      throw new SandpoolError(
        "capacity.exhausted",
        `the '${this.spec.name}' pool has no sandbox on this node`,
        {
          retryAfterSeconds: 2,
          cause: error,
        },
      );
    }
  }

  /**
   * Holds a sandbox `restore` starts (a memory checkpoint's new container) as leased from
   * this pool: it takes a place of this node's share like any start and frees it when it is
   * destroyed. With no place at once, 503 capacity.exhausted before anything starts: the
   * edge asks the next node.
   */
  async holdRestored(restore: () => Promise<SandboxRecord>): Promise<SandboxRecord> {
    try {
      return await this.pool.lendMade(restore);
    } catch (error) {
      if (!(error instanceof WarmSetFullError)) throw error;
      throw new SandpoolError(
        "capacity.exhausted",
        `the '${this.spec.name}' pool has no place on this node for a restore`,
        { retryAfterSeconds: 2, cause: error },
      );
    }
  }

  /** Destroys a leased or parked sandbox, freeing its place. */
  async destroy(record: SandboxRecord): Promise<void> {
    if (this.pool.isBorrowed(record) || this.pool.isAside(record)) await this.pool.destroy(record);
    else await this.deps.runtime.destroy(record.runtimeId);
  }

  /** Destroys every idle warm sandbox (a draining node keeps none). */
  async destroyIdle(): Promise<void> {
    await this.pool.destroyIdle();
  }

  /**
   * Parks a leased sandbox, scrubbed, as `parked` (its owner's): it keeps its place and is
   * lent to no one but its owner. False when it is not leased from this pool (destroyed
   * meanwhile, or adopted after a restart).
   */
  park(leased: SandboxRecord, parked: SandboxRecord): boolean {
    return this.pool.setAside(leased, parked);
  }

  /** Runs `waiting` (a lease waiting for a scrub here) with one more sandbox wanted warm meanwhile. */
  whileWanting<R>(waiting: Promise<R>): Promise<R> {
    return this.pool.whileWanting(waiting);
  }

  /** Leases the newest parked sandbox that `matches`, if any. */
  takeParked(matches: (record: SandboxRecord) => boolean): SandboxRecord | undefined {
    return this.pool.takeAside(matches);
  }

  /** The parked sandboxes, longest-parked first. */
  parkedRecords(): SandboxRecord[] {
    return this.pool.asideItems();
  }

  /** Destroys every parked sandbox (a draining node parks none). */
  async destroyParked(): Promise<void> {
    await this.pool.destroyAside();
  }

  /**
   * Sandbox ids of the idle warm sandboxes, the parked ones and those being started
   * (reconciliation leaves them alone).
   */
  knownIds(): string[] {
    return [
      ...this.pool.idleItems().map((record) => record.sandboxId),
      ...this.parkedRecords().map((record) => record.sandboxId),
      ...this.starting,
    ];
  }

  get parked(): number {
    return this.pool.setAsideCount;
  }

  get free(): number {
    return this.pool.available;
  }

  get leased(): number {
    return this.pool.borrowed;
  }

  get max(): number {
    return this.pool.max;
  }

  async close(): Promise<void> {
    // Idle sandboxes go with the node; leased ones stay until their sessions end or the
    // node's next start reconciles them.
    await this.pool.close();
  }

  /**
   * One start, once the engine absorbs another and a failing image's back-off is over
   * (src/pool/warm-pool-engine.ts): a burst of leases on this node starts its sandboxes a few
   * at a time, each finishing in its deadline, rather than all at once and each too late.
   */
  private async start(): Promise<SandboxRecord> {
    return this.engine.startInTurn(this.spec, " on this node", () => this.startNow());
  }

  private async startNow(): Promise<SandboxRecord> {
    const sandboxId = randomBytes(12).toString("hex");
    const deadline = Date.now() + this.spec.coldStartTimeoutMs;
    this.starting.add(sandboxId);
    let started: Awaited<ReturnType<SandboxRuntime["start"]>>;
    try {
      started = await this.deps.runtime.start({ sandboxId, pool: this.spec, deadline });
    } catch (error) {
      this.starting.delete(sandboxId);
      throw error;
    }
    try {
      const innerSessionId = await this.deps.client.createInnerSession(
        started.endpoint,
        Math.max(1, deadline - Date.now()),
      );
      const cpuBaseMs = await cpuBaselineMs(this.deps.runtime, started.runtimeId);
      return {
        sandboxId,
        pool: this.spec.name,
        endpoint: started.endpoint,
        runtimeId: started.runtimeId,
        innerSessionId,
        createdAt: Date.now(),
        node: this.deps.nodeId,
        ...(cpuBaseMs === undefined ? {} : { cpuBaseMs }),
      };
    } catch (error) {
      await this.deps.runtime.destroy(started.runtimeId).catch(() => undefined);
      throw error;
    } finally {
      this.starting.delete(sandboxId);
    }
  }

  private async answers(record: SandboxRecord): Promise<boolean> {
    try {
      const answer = await this.deps.client.json(record.endpoint, {
        method: "GET",
        path: "/health",
        timeoutMs: HEALTH_TIMEOUT_MS,
      });
      return answer.status === 200;
    } catch {
      return false;
    }
  }
}
