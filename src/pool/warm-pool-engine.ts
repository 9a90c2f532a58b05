/**
 * The one warm-pool engine, for a host's pools (`sandpool serve`, src/pool/pool-manager.ts)
 * and a node's (src/roles/node/node-warm-pool.ts). The two kinds of pool differ only in where
 * their idle sandboxes are kept, which is what an `IdleSet` says:
 *
 * - serve: in the coordination store, shared by the replicas (src/pool/pool-warmup.ts): the
 *   store's membership caps the pool, other replicas' warm-up starts count as starting, idle
 *   memberships are renewed and parked sandboxes gone stale retired before each look;
 * - a node: in the node's memory (src/roles/node/warm-set.ts): the set's places cap it, its
 *   lent ones count toward min.
 *
 * Everything else is here, once:
 *
 * - How many to start: what the idle set wants (`target`) less what is idle and what is
 *   starting (this engine's warm-up starts, or the set's own count of starts if larger),
 *   no more at once than the engine's measured start rate absorbs within the pool's
 *   `warmupConcurrency` (src/pool/start-rate.ts), and no more than the machine's share of
 *   warm-up across all pools (src/pool/warmup-limiter.ts). Leases waiting elsewhere for a
 *   sandbox (`whileWanting`: a workspace's sandbox being scrubbed) count as wanted too.
 * - One warm-up per pool at a time: a call made while it runs wakes it to look again (a lease
 *   just took an idle sandbox) and returns at once. It refills as each start ends, so one slow
 *   start holds nothing back, and ends when nothing is starting and nothing more is wanted.
 * - At the pool's cap a start the pool promised (its own minIdle, not the demand's reserve
 *   above it) takes the place of the longest-parked sandbox; any other at the cap, or a
 *   failed start, stops the run: the next call (a tick, an event) tries again.
 * - A failing image: each failed start steps the pool's back-off (src/pool/start-backoff.ts),
 *   is counted (`onStartFailure`) and logged once per step; warm-up starts nothing while the
 *   pool backs off, this engine's back-off or the one shared by the deployment
 *   (`sharedFailure`). A start that succeeds resets it.
 * - Bursts: the start gate (src/pool/start-gate.ts) counts the starts in flight; a lease that
 *   must wait for a turn (`startInTurn`: a node's leases) waits out the back-off (at most its
 *   pool's cold-start deadline) and the gate (at most its `startQueueTimeoutMs`), and is
 *   refused with `startsTooLate` past either.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import type { PoolSpec } from "../runtime/sandbox-runtime.js";
import { LEASE_POLL_MAX_MS, startQueueTimeoutMsOf } from "./sandbox-pool.js";
import { StartBackoff, type StartFailure } from "./start-backoff.js";
import { StartGate, startsTooLate } from "./start-gate.js";
import { StartRate } from "./start-rate.js";
import { WarmupLimiter } from "./warmup-limiter.js";

/** A pool's warm-up starts at once when its spec says nothing (the config's default). */
const DEFAULT_WARMUP_CONCURRENCY = 2;

/** What the engine needs to know of a pool. */
export type WarmPool = Pick<
  PoolSpec,
  "name" | "warmupConcurrency" | "coldStartTimeoutMs" | "startQueueTimeoutMs"
>;

/** Where a pool's idle sandboxes are kept: all that differs between serve's pools and a node's. */
export interface IdleSet<T> {
  /** Runs before a warm-up first looks (keeping idle ones counted, retiring stale parked ones). */
  tidy?(): Promise<void>;
  /**
   * How many are idle, and how many starts for the pool are under way that will turn idle
   * (another replica's warm-up starts, or the set's own starts): read together, `starting` first.
   */
  look(): Promise<IdleCount> | IdleCount;
  /**
   * How many idle ones the pool wants now (`wanted`, what `whileWanting` counts included), and
   * how many of those the pool promised (`promised`): only those may take a parked one's place.
   */
  target(): { wanted: number; promised: number };
  /** Starts one for the idle set: undefined when the pool is at its cap; throws when it fails. */
  start(): Promise<T | undefined>;
  /** Keeps one just started idle: false when it could not be kept (it was given up). */
  keep(item: T): Promise<boolean> | boolean;
  /** Gives the longest-parked one's place up (it is destroyed): false when none is parked. */
  evictParked(): Promise<boolean>;
}

export interface IdleCount {
  idle: number;
  starting: number;
}

export interface WarmPoolEngineDeps {
  log: Pick<Logger, "error" | "debug">;
  now?: () => number;
  /** Warm-up starts in flight at once, all pools together (unbounded without it). */
  limiter?: WarmupLimiter;
  /** The failed start the deployment backs off from, shared between replicas, if any. */
  sharedFailure?: (pool: string) => StartFailure | undefined;
  /** Counts each failed start of a pool's image (metrics, demand). */
  onStartFailure?: (pool: string) => void;
}

interface WakeUp {
  again: boolean;
  resolve?: () => void;
}

export class WarmPoolEngine {
  /** Starts in flight, and the leases that wait for one to end (src/pool/start-gate.ts). */
  readonly gate: StartGate;
  /** The engine's start throughput, from these pools' starts: it bounds warm-up's concurrency. */
  readonly rate: StartRate;
  private readonly now: () => number;
  private readonly limiter: WarmupLimiter;
  private readonly backoff = new Map<string, StartBackoff>();
  private readonly warming = new Map<string, Promise<void>>();
  private readonly wakeUp = new Map<string, WakeUp>();
  /** Leases waiting elsewhere for a sandbox of the pool: each is one more wanted idle. */
  private readonly wanting = new Map<string, number>();

  constructor(private readonly deps: WarmPoolEngineDeps) {
    this.now = deps.now ?? Date.now;
    this.limiter = deps.limiter ?? new WarmupLimiter(Number.POSITIVE_INFINITY);
    this.rate = new StartRate(this.now);
    this.gate = new StartGate(this.rate);
  }

  /** The pool's back-off (every start of its image steps or resets it). */
  backoffOf(name: string): StartBackoff {
    let backoff = this.backoff.get(name);
    if (!backoff) {
      backoff = new StartBackoff();
      this.backoff.set(name, backoff);
    }
    return backoff;
  }

  /**
   * Whether warm-up may start sandboxes of the pool now: not while it backs off, nor while the
   * deployment's last failed start says to wait (a failing image is tried at the pace of one
   * back-off, not one per replica).
   */
  mayWarm(name: string): boolean {
    const now = this.now();
    if (!this.backoffOf(name).mayStart(now)) return false;
    const shared = this.deps.sharedFailure?.(name);
    return !shared || now >= shared.nextAttemptAt;
  }

  /** A start of the pool's image succeeded: its back-off is reset. */
  startSucceeded(name: string): void {
    this.backoffOf(name).succeeded(this.now());
  }

  /**
   * A start of the pool's image failed: counted, the pool's back-off stepped, logged once per
   * step (starts failing together, or during the wait, are one story). The answer is the 503
   * a lease that wanted the start gets.
   */
  startFailed(pool: Pick<WarmPool, "name">, error: unknown): SandpoolError {
    this.deps.onStartFailure?.(pool.name);
    const reason = error instanceof Error ? error.message : String(error);
    const { delayMs, newStep } = this.backoffOf(pool.name).failed(this.now(), reason);
    if (newStep) {
      this.deps.log.error(
        { err: error, pool: pool.name, retryInMs: delayMs },
        "sandbox start failed; starts back off",
      );
    } else {
      this.deps.log.debug({ err: error, pool: pool.name }, "sandbox start failed during the back-off");
    }
    return new SandpoolError("capacity.exhausted", `no sandbox of the '${pool.name}' pool could be started`, {
      retryAfterSeconds: Math.max(1, Math.ceil(delayMs / 1000)),
      cause: error,
    });
  }

  /**
   * Runs one start of the pool's image, counted at the gate and in the start rate, and learns
   * from it: success resets the back-off, failure steps it (`startFailed`, which is thrown).
   */
  async measured<T>(pool: Pick<WarmPool, "name">, start: () => Promise<T>): Promise<T> {
    const ended = this.gate.began(pool.name);
    const measured = this.rate.began();
    try {
      const started = await start();
      this.startSucceeded(pool.name);
      return started;
    } catch (error) {
      throw this.startFailed(pool, error);
    } finally {
      measured();
      ended();
    }
  }

  /**
   * Runs one start of the pool's image for a lease (`measured`) once it is its turn: a
   * failing image after its back-off (not in a loop as fast as it fails), and a burst once
   * the engine absorbs another start. Past the pool's cold-start deadline (the back-off) or
   * its `startQueueTimeoutMs` (the gate), 503 (`startsTooLate`, `where` said after the
   * pool's name).
   */
  async startInTurn<T>(pool: WarmPool, where: string, start: () => Promise<T>): Promise<T> {
    const retryAt = this.backoffOf(pool.name).lastFailure?.nextAttemptAt ?? 0;
    if (retryAt > this.now()) {
      if (retryAt >= this.now() + pool.coldStartTimeoutMs) {
        throw startsTooLate(pool, { ms: pool.coldStartTimeoutMs, setting: "coldStartTimeoutMs" }, where);
      }
      await sleep(retryAt - this.now());
    }
    const queueTimeoutMs = startQueueTimeoutMsOf(pool);
    const waitUntil = this.now() + queueTimeoutMs;
    let ticket: number | undefined;
    try {
      while (!this.gate.mayStart(pool.name, ticket)) {
        if (this.now() >= waitUntil) {
          throw startsTooLate(pool, { ms: queueTimeoutMs, setting: "startQueueTimeoutMs" }, where);
        }
        ticket ??= this.gate.ticket();
        await this.gate.waitForTurn(pool.name, ticket, {
          pollMs: LEASE_POLL_MAX_MS,
          maxWaitMs: waitUntil - this.now(),
        });
      }
    } finally {
      if (ticket !== undefined) this.gate.leave(pool.name, ticket);
    }
    // Counted at the gate at once, before any await: the leases of a burst see each other.
    return this.measured(pool, start);
  }

  /** Leases waiting elsewhere for a sandbox of the pool (`whileWanting`). */
  wantingOf(name: string): number {
    return this.wanting.get(name) ?? 0;
  }

  /** Runs `wait` counted as one more idle sandbox the pool wants, and wakes warm-up to start it. */
  async whileWanting<T, R>(pool: WarmPool, set: IdleSet<T>, wait: () => Promise<R>): Promise<R> {
    this.wanting.set(pool.name, this.wantingOf(pool.name) + 1);
    this.warm(pool, set).catch((error: unknown) => this.deps.log.error({ err: error }, "warm-up failed"));
    try {
      return await wait();
    } finally {
      this.wanting.set(pool.name, Math.max(0, this.wantingOf(pool.name) - 1));
    }
  }

  /** The pool's running warm-up, if one runs (it ends when nothing is starting). */
  running(name: string): Promise<void> | undefined {
    return this.warming.get(name);
  }

  /**
   * Tops one pool up. One warm-up per pool at a time: a tick and a lease's refill running
   * together would each count the same shortfall and start it twice. A call made meanwhile
   * wakes the running one and returns at once: a scheduled job must not hold a worker for a
   * warm-up another call runs.
   */
  warm<T>(pool: WarmPool, set: IdleSet<T>): Promise<void> {
    if (this.warming.has(pool.name)) {
      const wake = this.wakeUp.get(pool.name);
      if (wake) {
        wake.again = true;
        wake.resolve?.();
      }
      return Promise.resolve();
    }
    const run = this.warmUntilFull(pool, set).finally(() => {
      this.warming.delete(pool.name);
      this.wakeUp.delete(pool.name);
    });
    this.warming.set(pool.name, run);
    return run;
  }

  /**
   * Starts what the pool lacks, as places free up: each start that ends (or a wake-up) is a
   * fresh look at the shortfall. Returns when nothing is starting and nothing more is wanted,
   * or a start failed (at capacity, or failing: the next call tries again).
   */
  private async warmUntilFull<T>(pool: WarmPool, set: IdleSet<T>): Promise<void> {
    const wake: WakeUp = { again: false };
    this.wakeUp.set(pool.name, wake);
    await set.tidy?.();
    const inFlight = new Set<Promise<void>>();
    let stopped = false;
    for (;;) {
      wake.again = false;
      if (!stopped && this.mayWarm(pool.name)) {
        // Read before the idle count: a start that turns idle in between counts twice (the
        // next look starts it), never not at all (the pool would over-fill).
        const { idle, starting } = await set.look();
        const target = set.target();
        const underWay = Math.max(inFlight.size, starting);
        const wanted = Math.min(
          target.wanted - idle - underWay,
          // No more at once than the engine absorbs: more would only slow each start.
          this.rate.concurrency(pool.warmupConcurrency ?? DEFAULT_WARMUP_CONCURRENCY) - inFlight.size,
        );
        // What the machine can take now; the rest waits for a place or the next call.
        const granted = wanted > 0 ? this.limiter.tryAcquire(wanted) : 0;
        const promised = target.promised - idle - underWay;
        for (let i = 0; i < granted; i++) {
          const start: Promise<void> = this.warmOne(set, i < promised)
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
   * One warm-up start: true when a sandbox joined the idle set. At the cap, a start the pool
   * promised (`mayEvict`) takes the longest-parked sandbox's place: minIdle is the pool's
   * promise to every workspace, reuse a bonus to one.
   */
  private async warmOne<T>(set: IdleSet<T>, mayEvict: boolean): Promise<boolean> {
    let item = await set.start().catch(() => null);
    if (item === undefined && mayEvict && (await set.evictParked())) {
      item = await set.start().catch(() => null);
    }
    if (item === undefined || item === null) return false;
    return set.keep(item);
  }
}
