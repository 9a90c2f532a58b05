/**
 * The warm pool. Each pool keeps `minIdle` started sandboxes (each with its inner session
 * already created) so a lease is one atomic pop; a dry pool below `maxTotal` cold-starts a
 * sandbox within the pool's deadline; a pool at `maxTotal` waits while places are turning
 * over (warm-up starts, sandboxes being destroyed) and else refuses with 503. Membership in
 * the store caps a pool's size across replicas. A pool whose starts keep failing backs off
 * exponentially, so an image that cannot start does not spin. Sizes are read through
 * `sizes` on every warm-up and start, so an operator's resize is obeyed without a restart.
 * Warm-up tops a pool up to its effective minIdle, which follows the deployment's lease
 * rate (src/pool/pool-demand.ts), a few starts at a time and no more than the machine's
 * share (src/pool/warmup-limiter.ts) across all pools.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import type { SandboxClient } from "../forward/sandbox-client.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { PoolSpec, SandboxRuntime, SandboxUsage, StartedSandbox } from "../runtime/sandbox-runtime.js";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";
import type { MemberHold, SandboxRecord } from "../store/coordination/records.js";
import { cpuBaselineMs } from "./cpu-baseline.js";
import { InFlightMarks } from "./in-flight-marks.js";
import { PoolDemandAccounting } from "./pool-demand-accounting.js";
import type { PoolSizes } from "./pool-sizes.js";
import {
  type GatewayPools,
  LEASE_POLL_MAX_MS,
  type LeasedSandbox,
  leaseBudgetMs,
  type PoolCapacity,
} from "./sandbox-pool.js";
import { RECYCLE_WAIT_MS, SandboxReuse } from "./sandbox-reuse.js";
import { StartBackoff } from "./start-backoff.js";
import { StartGate, startsTooLate } from "./start-gate.js";
import { StartRate, type StartRateView } from "./start-rate.js";
import { WarmupLimiter } from "./warmup-limiter.js";

/** How long an idle sandbox counts against its pool before it must be confirmed again. */
export const IDLE_MEMBERSHIP_MS = 10 * 60_000;
/** How long ending a session waits for a sandbox's usage before it goes on without it. */
const USAGE_TIMEOUT_MS = 5_000;
/** A retiring mark lapses after this, so a destroy that never ends stops making leases wait. */
const RETIRING_MARK_MS = 60_000;
/** A lease waiting for places turning over looks again after this, then twice as long each time, up to the most. */
const LEASE_POLL_FIRST_MS = 10;
/** Idle memberships are renewed this often (not on every warm-up): well within their expiry. */
const RENEW_IDLE_EVERY_MS = IDLE_MEMBERSHIP_MS / 10;

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

/** Brings a sandbox up under a given id, with its inner session (a fresh start, or a restore). */
export type SandboxBringUp = (
  sandboxId: string,
  deadline: number,
) => Promise<StartedSandbox & { innerSessionId: string }>;

export type { PoolCounters, SharedPoolCounters } from "./pool-demand-accounting.js";
export type { LeasedSandbox, PoolCapacity } from "./sandbox-pool.js";

export class PoolManager implements GatewayPools {
  private readonly pools: Map<string, PoolSpec>;
  /** Starts in flight here, and the leases that wait for one to end (src/pool/start-gate.ts). */
  private readonly starts: StartGate;
  private readonly backoff = new Map<string, StartBackoff>();
  /** Leases, failed starts, refill times and the deployment's counts: what sizes warm-up. */
  readonly demand: PoolDemandAccounting;
  private readonly warming = new Map<string, Promise<void>>();
  /** Wakes a pool's running warm-up to look at its shortfall again. */
  private readonly wakeUp = new Map<string, { again: boolean; resolve?: () => void }>();
  private readonly renewedIdleAt = new Map<string, number>();
  private readonly limiter: WarmupLimiter;
  private readonly now: () => number;
  /** The marks of this replica's starts, renewed while they run. */
  private readonly inFlight: InFlightMarks;
  private readonly reuse: SandboxReuse;
  /** The engine's start throughput, from this replica's starts: it bounds warm-up's concurrency. */
  private readonly startRate: StartRate;
  /**
   * Leases waiting here for their workspace's sandbox being scrubbed, per pool: each is a
   * session the pool had nothing ready for, so warm-up starts one more fresh sandbox for it.
   * A workspace whose sessions come faster than its sandboxes are scrubbed thus gains
   * sandboxes until one of its own is parked whenever a session begins; then no lease
   * waits and warm-up stops adding.
   */
  private readonly waitingForRecycle = new Map<string, number>();

  constructor(private readonly deps: PoolManagerDeps) {
    this.pools = new Map(deps.pools.map((pool) => [pool.name, pool]));
    this.now = deps.now ?? Date.now;
    this.limiter = deps.warmupLimiter ?? new WarmupLimiter();
    this.inFlight = new InFlightMarks(deps.store, deps.log, this.now);
    this.startRate = new StartRate(this.now);
    this.starts = new StartGate(this.startRate);
    this.reuse = new SandboxReuse({
      store: deps.store,
      runtime: deps.runtime,
      client: deps.client,
      log: deps.log,
      now: this.now,
    });
    for (const pool of deps.pools) this.backoff.set(pool.name, new StartBackoff());
    this.demand = new PoolDemandAccounting(deps.pools, (name) => this.backoff.get(name));
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
    return this.startRate.view();
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
    const leased = await this.leaseOrWait(pool, hold, started);
    this.demand.countLease(pool.name, leased);
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
   * cold-start deadline; a pool full of leased sandboxes refuses at once.
   */
  private async leaseOrWait(pool: PoolSpec, hold: MemberHold, started: bigint): Promise<LeasedSandbox> {
    // Nothing was turning over at the last look: one more look before refusing, since a place
    // may have been freed (a destroy ending, a warm-up start turning idle) between the
    // failed start and the count.
    let nothingTurning = false;
    for (let attempt = 0; ; attempt++) {
      // Marked in flight until its lease is due to be recorded: a replica that dies before
      // that leaves a mark that lapses, not a place held for the session's whole life.
      const idle = await this.deps.store.leaseIdle(pool.name, {
        ...hold,
        now: attempt === 0 ? hold.now : this.now(),
        handOverBy: this.inFlight.until(),
      });
      if (idle) return { record: idle, warm: true, reused: idle.owner !== undefined };
      // The workspace's own sandbox being scrubbed comes sooner than a cold start.
      const waitedMs = Number(process.hrtime.bigint() - started) / 1e6;
      if (
        hold.reuse !== false &&
        (await this.waitForRecycle(pool, hold.workspace, RECYCLE_WAIT_MS - waitedMs))
      ) {
        continue;
      }
      if (!this.starts.mayStart(pool.name)) {
        // A burst: as many starts in flight as the engine absorbs; this lease takes the
        // next sandbox that turns idle, or the next free start.
        if (waitedMs >= pool.coldStartTimeoutMs) throw startsTooLate(pool);
        await this.starts.waitForNextEnd(pool.name, LEASE_POLL_MAX_MS);
        continue;
      }
      const record = await this.startSandbox(pool, "cold");
      if (record) return { record, warm: false, reused: false };
      // At the cap: a sandbox parked for another workspace gives its place up.
      await this.evictParked(pool);
      const outOfTime = Number(process.hrtime.bigint() - started) / 1e6 >= pool.coldStartTimeoutMs;
      if (outOfTime || (await this.turningOver(pool)) === 0) {
        if (!outOfTime && !nothingTurning) {
          nothingTurning = true;
          continue;
        }
        throw new SandpoolError(
          "capacity.exhausted",
          `the '${pool.name}' pool is at capacity (its maxTotal, ${this.sizeOf(pool).maxTotal}, raises it: \`sandpool pools resize\` or the pool's config)`,
          {
            retryAfterSeconds: 2,
          },
        );
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
    this.waitingForRecycle.set(pool.name, (this.waitingForRecycle.get(pool.name) ?? 0) + 1);
    this.warm(pool).catch((error: unknown) => this.deps.log.error({ err: error }, "warm-up failed"));
    try {
      return await this.reuse.waitForRecycle(pool.name, workspace, ms);
    } finally {
      this.waitingForRecycle.set(pool.name, (this.waitingForRecycle.get(pool.name) ?? 1) - 1);
    }
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
      handOverBy: this.inFlight.until(),
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

  /**
   * Tops one pool up. One warm-up per pool at a time on a replica: a tick and a lease's
   * refill running together would each count the same shortfall and start it twice. A call
   * made meanwhile wakes the running one (a lease just took an idle sandbox) and returns at
   * once: a scheduled job must not hold a worker for a warm-up another call runs.
   */
  warm(pool: PoolSpec): Promise<void> {
    if (this.warming.has(pool.name)) {
      const wake = this.wakeUp.get(pool.name);
      if (wake) {
        wake.again = true;
        wake.resolve?.();
      }
      return Promise.resolve();
    }
    const run = this.warmUntilFull(pool).finally(() => {
      this.warming.delete(pool.name);
      this.wakeUp.delete(pool.name);
    });
    this.warming.set(pool.name, run);
    return run;
  }

  /**
   * Starts what the pool lacks, as places free up: each start that ends (or a wake-up) is a
   * fresh look at the shortfall, so one slow start does not hold the others back. Returns
   * when nothing is starting and nothing more is wanted, or a start failed (at capacity, or
   * failing: the next tick tries again).
   */
  private async warmUntilFull(pool: PoolSpec): Promise<void> {
    const wake: { again: boolean; resolve?: () => void } = { again: false };
    this.wakeUp.set(pool.name, wake);
    await this.renewIdleMemberships(pool);
    await this.retireExpiredParked(pool);
    const inFlight = new Set<Promise<void>>();
    let stopped = false;
    for (;;) {
      wake.again = false;
      if (!stopped && this.mayWarm(pool)) {
        // Every replica's warm-up starts count, or two replicas would each start the same
        // shortfall. Read before the idle queue: a start that turns idle in between counts
        // twice (the next look starts it), never not at all (the pool would over-fill).
        const warming = await this.deps.store.countWarming(pool.name, this.now());
        const idle = await this.deps.store.countIdle(pool.name);
        const short = this.waitingForRecycle.get(pool.name) ?? 0;
        const wanted = Math.min(
          this.effectiveMinIdle(pool) + short - idle - Math.max(inFlight.size, warming),
          // No more at once than the engine absorbs: more would only slow each start.
          this.startRate.concurrency(pool.warmupConcurrency) - inFlight.size,
        );
        // What the machine can take now; the rest waits for a place or the next tick.
        const granted = wanted > 0 ? this.limiter.tryAcquire(wanted) : 0;
        // Only the pool's own minIdle may take a parked sandbox's place; the demand's
        // reserve above it waits for free places (a parked sandbox is a burst's best start).
        const promised = this.sizeOf(pool).minIdle + short - idle - Math.max(inFlight.size, warming);
        for (let i = 0; i < granted; i++) {
          const start: Promise<void> = this.warmOne(pool, i < promised)
            .then((ok) => {
              if (!ok) stopped = true;
            })
            .finally(() => {
              this.limiter.release();
              inFlight.delete(start);
            });
          inFlight.add(start);
        }
      }
      if (wake.again) continue; // called meanwhile: look again before waiting or ending
      if (inFlight.size === 0) return;
      const woken = new Promise<void>((resolve) => {
        wake.resolve = resolve;
      });
      await Promise.race([...inFlight, woken]);
      wake.resolve = undefined;
    }
  }

  /**
   * One warm-up start: true when a sandbox joined the idle list. A pool at its cap with
   * sandboxes parked for their workspaces gives the longest-parked one's place to a fresh
   * sandbox when `mayEvict` (the start is for minIdle): minIdle is the pool's promise to
   * every workspace, reuse a bonus to one.
   */
  private async warmOne(pool: PoolSpec, mayEvict: boolean): Promise<boolean> {
    let record = await this.startSandbox(pool, "warm-up").catch(() => null);
    if (record === undefined && mayEvict && (await this.evictParked(pool, { wait: true }))) {
      record = await this.startSandbox(pool, "warm-up").catch(() => null);
    }
    if (!record) return false;
    const now = this.now();
    if (await this.deps.store.pushIdle(record, { until: now + IDLE_MEMBERSHIP_MS, now })) return true;
    // Its place was reclaimed (this replica stalled past the start's in-flight mark): it goes.
    this.deps.log.warn({ pool: pool.name, sandbox: record.sandboxId }, "a started sandbox lost its place");
    await this.deps.runtime.destroy(record.runtimeId).catch(() => undefined);
    return false;
  }

  /** Idle sandboxes keep counting against the pool's cap for as long as they wait. */
  private async renewIdleMemberships(pool: PoolSpec): Promise<void> {
    const now = this.now();
    const last = this.renewedIdleAt.get(pool.name);
    if (last !== undefined && now - last < RENEW_IDLE_EVERY_MS && now >= last) return;
    this.renewedIdleAt.set(pool.name, now);
    for (const idle of await this.deps.store.listIdle(pool.name)) {
      await this.deps.store.renewMember(pool.name, idle.sandboxId, now + IDLE_MEMBERSHIP_MS, now);
    }
  }

  /**
   * Whether warm-up may start sandboxes of the pool now: not while this replica backs off,
   * nor while another replica's last failed start says to wait (a failing image is tried at
   * the pace of one back-off, not one per replica).
   */
  private mayWarm(pool: PoolSpec): boolean {
    const now = this.now();
    if (!this.backoff.get(pool.name)!.mayStart(now)) return false;
    const shared = this.demand.sharedStartFailure(pool.name);
    return !shared || now >= shared.nextAttemptAt;
  }

  /** The failed start a pool is backing off from, this replica's or the deployment's, newest. */
  startFailureOf(name: string) {
    const local = this.backoff.get(name)?.lastFailure;
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
      const starting = this.starts.count(pool.name);
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
    const record = await this.startSandbox(pool, "restore", { sandboxId, bringUp });
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

  /** A fresh sandbox of the pool's image, with its inner session created. */
  private readonly freshBringUp =
    (pool: PoolSpec): SandboxBringUp =>
    async (sandboxId, deadline) => {
      const started = await this.deps.runtime.start({ sandboxId, pool, deadline });
      try {
        const innerSessionId = await this.deps.client.createInnerSession(
          started.endpoint,
          Math.max(1, deadline - this.now()),
        );
        return { ...started, innerSessionId };
      } catch (error) {
        await this.deps.runtime.destroy(started.runtimeId).catch(() => undefined);
        throw error;
      }
    };

  /**
   * Starts one sandbox and creates its inner session, for a lease (cold), for the idle
   * queue (warm-up: marked warming until it is pushed idle) or for a restore (`startFor`).
   * Undefined when the pool is at its cap; throws when the start fails (after cleaning up
   * what it started).
   */
  private async startSandbox(
    pool: PoolSpec,
    purpose: "cold" | "warm-up" | "restore",
    how: { sandboxId: string; bringUp: SandboxBringUp } = {
      sandboxId: randomBytes(12).toString("hex"),
      bringUp: this.freshBringUp(pool),
    },
  ): Promise<SandboxRecord | undefined> {
    const { sandboxId } = how;
    const deadline = this.now() + pool.coldStartTimeoutMs;
    // Counted before the first await: leases of a burst that looked at the gate together
    // must see each other's starts (src/pool/start-gate.ts).
    const startEnded = this.starts.began(pool.name);
    // The start is marked in flight, renewed while it runs: if this replica dies, its place
    // and its container are reclaimed within seconds (src/pool/reclaim-in-flight.ts).
    const counted = await this.deps.store
      .addMember(pool.name, sandboxId, this.sizeOf(pool).maxTotal, deadline + 5_000, this.now(), {
        warming: purpose === "warm-up",
        inFlightUntil: this.inFlight.until(),
      })
      .catch((error: unknown) => {
        startEnded();
        throw error;
      });
    if (!counted) {
      startEnded();
      return undefined;
    }
    this.inFlight.begin(pool.name, sandboxId);
    let runtimeId: string | undefined;
    const began = process.hrtime.bigint();
    // A restore is not a start of the image: it tells nothing of the engine's start rate.
    const measured = purpose === "restore" ? () => {} : this.startRate.began();
    try {
      const started = await how.bringUp(sandboxId, deadline);
      runtimeId = started.runtimeId;
      const { innerSessionId } = started;
      const cpuBaseMs = await cpuBaselineMs(this.deps.runtime, runtimeId);
      if (purpose !== "restore") {
        this.backoff.get(pool.name)!.succeeded(this.now());
        this.demand.recordRefill(pool.name, Number(process.hrtime.bigint() - began) / 1e6);
      }
      return {
        sandboxId,
        pool: pool.name,
        endpoint: started.endpoint,
        runtimeId,
        innerSessionId,
        createdAt: this.now(),
        ...(cpuBaseMs === undefined ? {} : { cpuBaseMs }),
      };
    } catch (error) {
      if (purpose === "restore") {
        if (runtimeId) await this.deps.runtime.destroy(runtimeId).catch(() => undefined);
        await this.deps.store.removeMember(pool.name, sandboxId);
        throw error;
      }
      this.deps.metrics.warmupFailures.inc({ pool: pool.name });
      this.demand.countWarmupFailure(pool.name);
      const reason = error instanceof Error ? error.message : String(error);
      const { delayMs, newStep } = this.backoff.get(pool.name)!.failed(this.now(), reason);
      // Once per back-off step: starts failing together, or during the wait, are one story.
      if (newStep) {
        this.deps.log.error(
          { err: error, pool: pool.name, retryInMs: delayMs },
          "sandbox start failed; warm-up backs off",
        );
      } else {
        this.deps.log.debug({ err: error, pool: pool.name }, "sandbox start failed during the back-off");
      }
      if (runtimeId) await this.deps.runtime.destroy(runtimeId).catch(() => undefined);
      await this.deps.store.removeMember(pool.name, sandboxId);
      throw new SandpoolError(
        "capacity.exhausted",
        `no sandbox of the '${pool.name}' pool could be started`,
        {
          retryAfterSeconds: Math.max(1, Math.ceil(delayMs / 1000)),
          cause: error,
        },
      );
    } finally {
      measured();
      this.inFlight.end(pool.name, sandboxId);
      startEnded();
    }
  }
}
