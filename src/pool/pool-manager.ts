/**
 * The warm pool. Each pool keeps `minIdle` started sandboxes (each with its inner session
 * already created) so a lease is one atomic pop; a dry pool below `maxTotal` cold-starts a
 * sandbox within the pool's deadline; a pool at `maxTotal` waits while places are turning
 * over (warm-up starts, sandboxes being destroyed) and else refuses with 503. Membership in
 * the store caps a pool's size across replicas. A pool whose starts keep failing backs off
 * exponentially, so an image that cannot start does not spin. Sizes are read through
 * `sizes` on every warm-up and start, so an operator's resize is obeyed without a restart.
 * This file is the lease path and the pool's places; starting one sandbox is
 * src/pool/sandbox-starter.ts, topping pools up is src/pool/pool-warmup.ts: the warm-pool
 * engine (src/pool/warm-pool-engine.ts, a node's pools use it too) over the store's idle
 * sandboxes.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import type { SandboxClient } from "../forward/sandbox-client.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { PoolSpec, SandboxRuntime, SandboxUsage } from "../runtime/sandbox-runtime.js";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";
import type { MemberHold, SandboxRecord } from "../store/coordination/records.js";
import { PoolDemandAccounting } from "./pool-demand-accounting.js";
import type { PoolSizes } from "./pool-sizes.js";
import { PoolWarmup } from "./pool-warmup.js";
import { poolAtCapacity, RefusalLog, readHolding } from "./refusal-log.js";
import {
  type GatewayPools,
  LEASE_POLL_MAX_MS,
  type LeasedSandbox,
  leaseBudgetMs,
  type PoolCapacity,
  startQueueTimeoutMsOf,
} from "./sandbox-pool.js";
import { RECYCLE_WAIT_MS, SandboxReuse } from "./sandbox-reuse.js";
import { type SandboxBringUp, SandboxStarter } from "./sandbox-starter.js";
import { startsTooLate } from "./start-gate.js";
import type { StartRateView } from "./start-rate.js";
import { WarmPoolEngine } from "./warm-pool-engine.js";
import { WarmupLimiter } from "./warmup-limiter.js";

/** How long ending a session waits for a sandbox's usage before it goes on without it. */
const USAGE_TIMEOUT_MS = 5_000;
/** A retiring mark lapses after this, so a destroy that never ends stops making leases wait. */
const RETIRING_MARK_MS = 60_000;
/** A lease waiting for places turning over looks again after this, then twice as long each time, up to the most. */
const LEASE_POLL_FIRST_MS = 10;

export interface PoolManagerDeps {
  pools: PoolSpec[];
  store: PoolLedger;
  runtime: SandboxRuntime;
  client: SandboxClient;
  metrics: GatewayMetrics;
  log: Logger;
  /** The sizes in force (they may change at run time); the configured ones without it. */
  sizes?: { sizeOf(pool: PoolSpec): PoolSizes };
  /** Warm-up starts in flight on this replica, all pools together (default: the CPU count). */
  warmupLimiter?: WarmupLimiter;
  now?: () => number;
}

export type { PoolCounters, SharedPoolCounters } from "./pool-demand-accounting.js";
export type { LeasedSandbox, PoolCapacity } from "./sandbox-pool.js";

export class PoolManager implements GatewayPools {
  private readonly pools: Map<string, PoolSpec>;
  /** Leases, failed starts, refill times and the deployment's counts: what sizes warm-up. */
  readonly demand: PoolDemandAccounting;
  /** Warm-up, the start gate, the start rate and the back-off (src/pool/warm-pool-engine.ts). */
  private readonly engine: WarmPoolEngine;
  private readonly starter: SandboxStarter;
  private readonly warmup: PoolWarmup;
  private readonly now: () => number;
  private readonly reuse: SandboxReuse;
  private readonly refusals: RefusalLog;

  constructor(private readonly deps: PoolManagerDeps) {
    this.pools = new Map(deps.pools.map((pool) => [pool.name, pool]));
    this.now = deps.now ?? Date.now;
    this.refusals = new RefusalLog(deps.log, this.now);
    this.reuse = new SandboxReuse({
      store: deps.store,
      runtime: deps.runtime,
      client: deps.client,
      log: deps.log,
      now: this.now,
    });
    this.demand = new PoolDemandAccounting(deps.pools, (name) => this.engine.backoffOf(name));
    this.engine = new WarmPoolEngine({
      log: deps.log,
      now: this.now,
      limiter: deps.warmupLimiter ?? new WarmupLimiter(),
      sharedFailure: (name) => this.demand.sharedStartFailure(name),
      onStartFailure: (name) => {
        deps.metrics.warmupFailures.inc({ pool: name });
        this.demand.countWarmupFailure(name);
      },
    });
    this.starter = new SandboxStarter({
      ...deps,
      now: this.now,
      engine: this.engine,
      maxTotalOf: (pool) => this.sizeOf(pool).maxTotal,
      demand: this.demand,
    });
    this.warmup = new PoolWarmup({
      ...deps,
      now: this.now,
      engine: this.engine,
      starter: this.starter,
      sizeOf: (pool) => this.sizeOf(pool),
      effectiveMinIdle: (pool) => this.effectiveMinIdle(pool),
      evictParked: (pool) => this.evictParked(pool, { wait: true }),
      retireExpiredParked: (pool) => this.retireExpiredParked(pool),
    });
  }

  leaseBudgetMs(pool: PoolSpec): number {
    return leaseBudgetMs(pool);
  }

  /** The sizes in force for a pool. */
  sizeOf(pool: PoolSpec): PoolSizes {
    return this.deps.sizes?.sizeOf(pool) ?? { minIdle: pool.minIdle, maxTotal: pool.maxTotal };
  }

  /** The minIdle warm-up keeps: the size in force, raised by the deployment's demand. */
  effectiveMinIdle(pool: PoolSpec): number {
    return this.demand.effectiveMinIdle(pool, this.sizeOf(pool));
  }

  /** The engine's start throughput as this replica measured it (every pool's starts). */
  startRateView(): StartRateView {
    return this.starter.rate.view();
  }

  list(): PoolSpec[] {
    return [...this.pools.values()];
  }

  /**
   * A ready sandbox for one session: warm from the pool (its place held for `hold` in the
   * same step), else cold-started (the caller then holds it: `holdMembership`), else, while
   * warm-up is starting sandboxes of the pool, the first of them to turn idle, else 503.
   */
  async lease(pool: PoolSpec, hold: MemberHold): Promise<LeasedSandbox> {
    const started = process.hrtime.bigint();
    const turn: { ticket?: number } = {};
    const leased = await this.leaseOrWait(pool, hold, started, turn).finally(() => {
      if (turn.ticket !== undefined) this.starter.gate.leave(pool.name, turn.ticket);
    });
    // A lease that queued at the start gate was counted then.
    if (turn.ticket === undefined) this.demand.countLease(pool.name, leased);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    this.deps.metrics.leaseDuration.observe(
      { pool: pool.name, start: leased.reused ? "reused" : leased.warm ? "warm" : "cold" },
      seconds,
    );
    return leased;
  }

  /**
   * A pool at its cap whose places are turning over (warm-up starts, or sandboxes whose
   * session ended waiting to be destroyed, on any replica) has a sandbox or a place on its
   * way: the lease waits for it, polling, rather than refusing what the pool is about to
   * have. It would have waited as long for a cold start, so it waits at most the pool's
   * cold-start deadline; a pool full of leased sandboxes refuses at once. Its turn at the
   * start gate in a burst has a bound of its own (`startQueueTimeoutMs`), not counted in that.
   */
  private async leaseOrWait(
    pool: PoolSpec,
    hold: MemberHold,
    started: bigint,
    // Its place at the start gate, once it waited there (src/pool/start-gate.ts).
    turn: { ticket?: number },
  ): Promise<LeasedSandbox> {
    // Nothing was turning over at the last look: one more look before refusing, since a place
    // may have been freed (a destroy ending, a warm-up start turning idle) between the
    // failed start and the count.
    let nothingTurning = false;
    // Time spent waiting its turn at the start gate, bounded by startQueueTimeoutMs alone.
    let queuedMs = 0;
    const queueTimeoutMs = startQueueTimeoutMsOf(pool);
    const elapsedMs = () => Number(process.hrtime.bigint() - started) / 1e6;
    for (let attempt = 0; ; attempt++) {
      // Marked in flight until its lease is due to be recorded: a replica that dies before
      // that leaves a mark that lapses, not a place held for the session's whole life.
      const idle = await this.deps.store.leaseIdle(pool.name, {
        ...hold,
        now: attempt === 0 ? hold.now : this.now(),
        handOverBy: this.starter.inFlight.until(),
      });
      if (idle) {
        if (turn.ticket !== undefined) this.starter.gate.passOn(pool.name);
        return { record: idle, warm: true, reused: idle.owner !== undefined };
      }
      // The workspace's own sandbox being scrubbed comes sooner than a cold start.
      if (
        hold.reuse !== false &&
        (await this.waitForRecycle(pool, hold.workspace, RECYCLE_WAIT_MS - elapsedMs()))
      ) {
        continue;
      }
      if (!this.starter.gate.mayStart(pool.name, turn.ticket)) {
        // A burst: as many starts in flight as the engine absorbs; this lease takes the
        // next sandbox that turns idle, or the next free start, at its turn.
        if (queuedMs >= queueTimeoutMs) {
          throw startsTooLate(pool, { ms: Math.round(queuedMs), setting: "startQueueTimeoutMs" });
        }
        if (turn.ticket === undefined) {
          turn.ticket = this.starter.gate.ticket();
          // A miss, counted as it queues, served or not: the burst reserve sizes the pool by
          // when demand came (a burst queued on starts is served over many seconds).
          this.demand.countLease(pool.name, { warm: false, reused: false });
        }
        const queuedFrom = performance.now();
        await this.starter.gate.waitForTurn(pool.name, turn.ticket, {
          key: hold.workspace,
          pollMs: LEASE_POLL_MAX_MS,
          maxWaitMs: queueTimeoutMs - queuedMs,
        });
        queuedMs += performance.now() - queuedFrom;
        continue;
      }
      const record = await this.starter.start(pool, "cold");
      if (record) return { record, warm: false, reused: false };
      // At the cap: a sandbox parked for another workspace gives its place up.
      await this.evictParked(pool);
      const outOfTime = elapsedMs() - queuedMs >= pool.coldStartTimeoutMs;
      if (outOfTime || (await this.turningOver(pool)) === 0) {
        if (!outOfTime && !nothingTurning) {
          nothingTurning = true;
          continue;
        }
        const { maxTotal } = this.sizeOf(pool);
        this.refusals.refused(pool.name, hold.workspace, elapsedMs(), () =>
          readHolding(this.deps.store, pool.name, this.now(), {
            maxTotal,
            turningOver: this.turningOver(pool),
          }),
        );
        throw poolAtCapacity(pool.name, maxTotal);
      }
      nothingTurning = false;
      await sleep(Math.min(LEASE_POLL_MAX_MS, LEASE_POLL_FIRST_MS * 2 ** attempt));
    }
  }

  /**
   * Waits, at most `ms`, for one of `workspace`'s sandboxes being scrubbed here: true when one
   * was parked (or destroyed) meanwhile. While it waits, the lease counts as a shortfall of
   * the pool's warm-up (`waitingForRecycle`), which is woken to start a sandbox for it.
   */
  private async waitForRecycle(pool: PoolSpec, workspace: string, ms: number): Promise<boolean> {
    if (!this.reuse.recyclingFor(pool.name, workspace) || ms <= 0) return false;
    return this.warmup.whileWaitingForRecycle(pool, () =>
      this.reuse.waitForRecycle(pool.name, workspace, ms),
    );
  }

  /**
   * Destroys the pool's longest-parked sandbox, marked retiring meanwhile so the lease that
   * wants its place waits for it. False when none is parked.
   */
  private async evictParked(pool: PoolSpec, options: { wait?: boolean } = {}): Promise<boolean> {
    const parked = await this.deps.store.popParked(pool.name);
    if (!parked) return false;
    await this.markRetiring(parked);
    const retired = this.retire(parked).catch((error: unknown) =>
      this.deps.log.warn({ err: error, sandbox: parked.sandboxId }, "could not destroy a parked sandbox"),
    );
    if (options.wait) await retired;
    return true;
  }

  /**
   * Gives the sandbox of `owner`'s ended session to that workspace's next session, scrubbed
   * (src/pool/sandbox-reuse.ts). False when it may not or could not be: destroy it then.
   */
  recycle(record: SandboxRecord, owner: string): Promise<boolean> {
    return this.reuse.park(record, owner);
  }

  expectRecycle(record: SandboxRecord, owner: string): void {
    this.reuse.expect(record, owner);
  }

  /** Destroys the pool's sandboxes parked and unused for too long: their places go back to the pool. */
  private async retireExpiredParked(pool: PoolSpec): Promise<void> {
    for (const record of await this.reuse.takeExpired(pool.name)) {
      await this.retire(record).catch((error: unknown) =>
        this.deps.log.warn({ err: error, sandbox: record.sandboxId }, "could not destroy a parked sandbox"),
      );
    }
  }

  /** How many of the pool's places are about to change: warm-up starts and sandboxes being destroyed. */
  private async turningOver(pool: PoolSpec): Promise<number> {
    const now = this.now();
    const [warming, retiring] = await Promise.all([
      this.deps.store.countWarming(pool.name, now),
      this.deps.store.countRetiring(pool.name, now),
    ]);
    return warming + retiring;
  }

  /**
   * What `lease` would do now, taking nothing (explain): a warm lease while the pool has an
   * idle sandbox, else a cold start while it is below `maxTotal`, else a wait while places
   * are turning over, else 503 capacity.exhausted.
   */
  async capacity(pool: PoolSpec): Promise<PoolCapacity> {
    const now = this.now();
    const [idle, members, turningOver] = await Promise.all([
      this.deps.store.countIdle(pool.name),
      this.deps.store.countMembers(pool.name, now),
      this.turningOver(pool),
    ]);
    const { maxTotal } = this.sizeOf(pool);
    const atCap = members >= maxTotal;
    const outcome = idle > 0 ? "warm" : !atCap ? "cold" : turningOver > 0 ? "wait" : "exhausted";
    const how = {
      warm: "a warm lease",
      cold: "a cold start",
      wait: `at capacity, ${turningOver} starting or being destroyed: the lease waits for one`,
      exhausted: "at capacity",
    }[outcome];
    return {
      pool: pool.name,
      outcome,
      idle,
      members,
      maxTotal,
      detail: `${idle} idle, ${members} of ${maxTotal} sandboxes in the pool: ${how}`,
    };
  }

  /**
   * Keeps a cold-started sandbox counted against its pool for `hold`'s workspace until
   * `hold.until` (marked in flight until its lease is due to be recorded). Throws when its
   * place was reclaimed meanwhile (this replica stalled past its start's in-flight mark):
   * the caller gives the sandbox up.
   */
  async holdMembership(record: SandboxRecord, hold: MemberHold): Promise<void> {
    const held = await this.deps.store.holdMember(record.pool, record.sandboxId, {
      ...hold,
      handOverBy: this.starter.inFlight.until(),
    });
    if (!held) {
      throw new SandpoolError("capacity.exhausted", `the '${record.pool}' pool's place was reclaimed`, {
        retryAfterSeconds: 1,
      });
    }
  }

  /**
   * What a sandbox used, measured outside it, when its runtime can tell (the docker runtime:
   * its cgroup). Never throws and never waits long: a session ends whether or not this answers.
   */
  async usageOf(record: Pick<SandboxRecord, "runtimeId">): Promise<SandboxUsage | undefined> {
    if (!this.deps.runtime.usage) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), USAGE_TIMEOUT_MS);
    });
    try {
      return await Promise.race([this.deps.runtime.usage(record.runtimeId), timeout]);
    } catch (error) {
      this.deps.log.warn({ err: error, runtimeId: record.runtimeId }, "could not read a sandbox's usage");
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Marks a sandbox whose session ended as about to be destroyed (the destroy job runs
   * `retire` later), so a lease that finds the pool at its cap meanwhile waits for the place.
   */
  async markRetiring(record: Pick<SandboxRecord, "pool" | "sandboxId">): Promise<void> {
    const now = this.now();
    await this.deps.store.markRetiring(record.pool, record.sandboxId, now + RETIRING_MARK_MS, now);
  }

  /** Destroys a sandbox and frees its place in the pool. Idempotent. */
  async retire(record: Pick<SandboxRecord, "pool" | "sandboxId" | "runtimeId">): Promise<void> {
    await this.deps.runtime.destroy(record.runtimeId);
    await this.deps.store.removeMember(record.pool, record.sandboxId);
  }

  /** Tops every pool up to its effective `minIdle`, a few starts at a time. */
  async warmAll(): Promise<void> {
    await Promise.all(this.list().map((pool) => this.warm(pool)));
  }

  /** Tops one pool up (src/pool/pool-warmup.ts). */
  warm(pool: PoolSpec): Promise<void> {
    return this.warmup.warm(pool);
  }

  /** The failed start a pool is backing off from, this replica's or the deployment's, newest. */
  startFailureOf(name: string) {
    const local = this.starter.backoffOf(name)?.lastFailure;
    const shared = this.demand.sharedStartFailure(name);
    if (!local) return shared;
    if (!shared) return local;
    return shared.at > local.at ? shared : local;
  }

  /** Counts for the pool gauges: idle and starting here, leased from the store's membership. */
  async refreshGauges(): Promise<void> {
    for (const pool of this.list()) {
      const idle = (await this.deps.store.listIdle(pool.name)).length;
      const members = await this.deps.store.countMembers(pool.name, this.now());
      const starting = this.starter.gate.count(pool.name);
      this.deps.metrics.poolSandboxes.set({ pool: pool.name, state: "idle" }, idle);
      this.deps.metrics.poolSandboxes.set({ pool: pool.name, state: "starting" }, starting);
      this.deps.metrics.poolSandboxes.set(
        { pool: pool.name, state: "leased" },
        Math.max(0, members - idle - starting),
      );
    }
  }

  /**
   * A sandbox of `pool` brought up by `bringUp` under `sandboxId` (a hibernated session's
   * restore, src/hibernate/), counted against the pool like a cold start and held for
   * `hold`. Undefined when the pool is at its cap; throws when `bringUp` fails (after
   * destroying what it started). Its failures are not the image's: no back-off follows.
   */
  async startFor(
    pool: PoolSpec,
    hold: MemberHold,
    sandboxId: string,
    bringUp: SandboxBringUp,
  ): Promise<SandboxRecord | undefined> {
    const record = await this.starter.start(pool, "restore", { sandboxId, bringUp });
    if (record) {
      try {
        await this.holdMembership(record, hold);
      } catch (error) {
        await this.retire(record).catch(() => undefined);
        throw error;
      }
    }
    return record;
  }
}
