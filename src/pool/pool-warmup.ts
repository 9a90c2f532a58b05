/**
 * Warm-up: tops each pool up to its effective minIdle (the size in force, raised by the
 * deployment's demand: src/pool/pool-demand.ts), a few starts at a time and no more than the
 * machine's share (src/pool/warmup-limiter.ts) across all pools; a pool whose starts keep
 * failing waits out its back-off, this replica's and the deployment's. Leases waiting for
 * their workspace's sandbox being scrubbed count as a shortfall too (`waitForRecycle`).
 */
import type { Logger } from "pino";
import type { PoolSpec, SandboxRuntime } from "../runtime/sandbox-runtime.js";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";
import type { PoolDemandAccounting } from "./pool-demand-accounting.js";
import type { PoolSizes } from "./pool-sizes.js";
import type { SandboxStarter } from "./sandbox-starter.js";
import type { WarmupLimiter } from "./warmup-limiter.js";

/** How long an idle sandbox counts against its pool before it must be confirmed again. */
const IDLE_MEMBERSHIP_MS = 10 * 60_000;
/** Idle memberships are renewed this often (not on every warm-up): well within their expiry. */
const RENEW_IDLE_EVERY_MS = IDLE_MEMBERSHIP_MS / 10;

export interface PoolWarmupDeps {
  store: PoolLedger;
  runtime: Pick<SandboxRuntime, "destroy">;
  log: Logger;
  now: () => number;
  starter: SandboxStarter;
  limiter: WarmupLimiter;
  demand: Pick<PoolDemandAccounting, "sharedStartFailure">;
  sizeOf: (pool: PoolSpec) => PoolSizes;
  effectiveMinIdle: (pool: PoolSpec) => number;
  /** Destroys the pool's longest-parked sandbox (its place goes to a fresh one); false when none. */
  evictParked: (pool: PoolSpec) => Promise<boolean>;
  /** Destroys the pool's sandboxes parked unused for too long. */
  retireExpiredParked: (pool: PoolSpec) => Promise<void>;
}

interface WakeUp {
  again: boolean;
  resolve?: () => void;
}

export class PoolWarmup {
  private readonly warming = new Map<string, Promise<void>>();
  /** Wakes a pool's running warm-up to look at its shortfall again. */
  private readonly wakeUp = new Map<string, WakeUp>();
  private readonly renewedIdleAt = new Map<string, number>();
  /**
   * Leases waiting here for their workspace's sandbox being scrubbed, per pool: each is a
   * session the pool had nothing ready for, so warm-up starts one more fresh sandbox for it.
   * A workspace whose sessions come faster than its sandboxes are scrubbed thus gains
   * sandboxes until one of its own is parked whenever a session begins; then no lease
   * waits and warm-up stops adding.
   */
  private readonly waitingForRecycle = new Map<string, number>();

  constructor(private readonly deps: PoolWarmupDeps) {}

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

  /** Runs `wait` counted as one more sandbox the pool lacks, and wakes warm-up to start it. */
  async whileWaitingForRecycle<T>(pool: PoolSpec, wait: () => Promise<T>): Promise<T> {
    this.waitingForRecycle.set(pool.name, (this.waitingForRecycle.get(pool.name) ?? 0) + 1);
    this.warm(pool).catch((error: unknown) => this.deps.log.error({ err: error }, "warm-up failed"));
    try {
      return await wait();
    } finally {
      this.waitingForRecycle.set(pool.name, (this.waitingForRecycle.get(pool.name) ?? 1) - 1);
    }
  }

  /**
   * Whether warm-up may start sandboxes of the pool now: not while this replica backs off,
   * nor while another replica's last failed start says to wait (a failing image is tried at
   * the pace of one back-off, not one per replica).
   */
  mayWarm(pool: PoolSpec): boolean {
    const now = this.deps.now();
    if (!this.deps.starter.backoffOf(pool.name)!.mayStart(now)) return false;
    const shared = this.deps.demand.sharedStartFailure(pool.name);
    return !shared || now >= shared.nextAttemptAt;
  }

  /**
   * Starts what the pool lacks, as places free up: each start that ends (or a wake-up) is a
   * fresh look at the shortfall, so one slow start does not hold the others back. Returns
   * when nothing is starting and nothing more is wanted, or a start failed (at capacity, or
   * failing: the next tick tries again).
   */
  private async warmUntilFull(pool: PoolSpec): Promise<void> {
    const { store, starter, limiter, now } = this.deps;
    const wake: WakeUp = { again: false };
    this.wakeUp.set(pool.name, wake);
    await this.renewIdleMemberships(pool);
    await this.deps.retireExpiredParked(pool);
    const inFlight = new Set<Promise<void>>();
    let stopped = false;
    for (;;) {
      wake.again = false;
      if (!stopped && this.mayWarm(pool)) {
        // Every replica's warm-up starts count, or two replicas would each start the same
        // shortfall. Read before the idle queue: a start that turns idle in between counts
        // twice (the next look starts it), never not at all (the pool would over-fill).
        const warming = await store.countWarming(pool.name, now());
        const idle = await store.countIdle(pool.name);
        const short = this.waitingForRecycle.get(pool.name) ?? 0;
        const wanted = Math.min(
          this.deps.effectiveMinIdle(pool) + short - idle - Math.max(inFlight.size, warming),
          // No more at once than the engine absorbs: more would only slow each start.
          starter.rate.concurrency(pool.warmupConcurrency) - inFlight.size,
        );
        // What the machine can take now; the rest waits for a place or the next tick.
        const granted = wanted > 0 ? limiter.tryAcquire(wanted) : 0;
        // Only the pool's own minIdle may take a parked sandbox's place; the demand's
        // reserve above it waits for free places (a parked sandbox is a burst's best start).
        const promised = this.deps.sizeOf(pool).minIdle + short - idle - Math.max(inFlight.size, warming);
        for (let i = 0; i < granted; i++) {
          const start: Promise<void> = this.warmOne(pool, i < promised)
            .then((ok) => {
              if (!ok) stopped = true;
            })
            .finally(() => {
              limiter.release();
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
    const { starter, store, now } = this.deps;
    let record = await starter.start(pool, "warm-up").catch(() => null);
    if (record === undefined && mayEvict && (await this.deps.evictParked(pool))) {
      record = await starter.start(pool, "warm-up").catch(() => null);
    }
    if (!record) return false;
    const at = now();
    if (await store.pushIdle(record, { until: at + IDLE_MEMBERSHIP_MS, now: at })) return true;
    // Its place was reclaimed (this replica stalled past the start's in-flight mark): it goes.
    this.deps.log.warn({ pool: pool.name, sandbox: record.sandboxId }, "a started sandbox lost its place");
    await this.deps.runtime.destroy(record.runtimeId).catch(() => undefined);
    return false;
  }

  /** Idle sandboxes keep counting against the pool's cap for as long as they wait. */
  private async renewIdleMemberships(pool: PoolSpec): Promise<void> {
    const now = this.deps.now();
    const last = this.renewedIdleAt.get(pool.name);
    if (last !== undefined && now - last < RENEW_IDLE_EVERY_MS && now >= last) return;
    this.renewedIdleAt.set(pool.name, now);
    for (const idle of await this.deps.store.listIdle(pool.name)) {
      await this.deps.store.renewMember(pool.name, idle.sandboxId, now + IDLE_MEMBERSHIP_MS, now);
    }
  }
}
