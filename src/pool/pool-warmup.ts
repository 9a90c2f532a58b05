/**
 * Warm-up of a host's pools (`sandpool serve`): the warm-pool engine
 * (src/pool/warm-pool-engine.ts) with the idle sandboxes kept in the coordination store, shared
 * by the replicas. Each pool tops up to its effective minIdle (the size in force, raised by
 * the deployment's demand: src/pool/pool-demand.ts); every replica's warm-up starts count as
 * starting, so two replicas do not start the same shortfall; idle sandboxes keep counting
 * against the pool's cap while they wait (their memberships renewed), and sandboxes parked
 * unused for too long are retired before each look. Leases waiting for their workspace's
 * sandbox being scrubbed count as a shortfall too (`whileWaitingForRecycle`).
 */
import type { Logger } from "pino";
import type { PoolSpec, SandboxRuntime } from "../runtime/sandbox-runtime.js";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";
import type { SandboxRecord } from "../store/coordination/records.js";
import type { PoolSizes } from "./pool-sizes.js";
import type { SandboxStarter } from "./sandbox-starter.js";
import type { IdleSet, WarmPoolEngine } from "./warm-pool-engine.js";

/** How long an idle sandbox counts against its pool before it must be confirmed again. */
const IDLE_MEMBERSHIP_MS = 10 * 60_000;
/** Idle memberships are renewed this often (not on every warm-up): well within their expiry. */
const RENEW_IDLE_EVERY_MS = IDLE_MEMBERSHIP_MS / 10;

export interface PoolWarmupDeps {
  store: PoolLedger;
  runtime: Pick<SandboxRuntime, "destroy">;
  log: Logger;
  now: () => number;
  engine: WarmPoolEngine;
  starter: SandboxStarter;
  sizeOf: (pool: PoolSpec) => PoolSizes;
  effectiveMinIdle: (pool: PoolSpec) => number;
  /** Destroys the pool's longest-parked sandbox (its place goes to a fresh one); false when none. */
  evictParked: (pool: PoolSpec) => Promise<boolean>;
  /** Destroys the pool's sandboxes parked unused for too long. */
  retireExpiredParked: (pool: PoolSpec) => Promise<void>;
}

export class PoolWarmup {
  private readonly renewedIdleAt = new Map<string, number>();
  private readonly idleSets = new Map<string, IdleSet<SandboxRecord>>();

  constructor(private readonly deps: PoolWarmupDeps) {}

  /** Tops one pool up (one warm-up per pool at a time: src/pool/warm-pool-engine.ts). */
  warm(pool: PoolSpec): Promise<void> {
    return this.deps.engine.warm(pool, this.idleSetOf(pool));
  }

  /**
   * Runs `wait` counted as one more sandbox the pool lacks, and wakes warm-up to start it. A
   * workspace whose sessions come faster than its sandboxes are scrubbed thus gains sandboxes
   * until one of its own is parked whenever a session begins; then no lease waits and
   * warm-up stops adding.
   */
  whileWaitingForRecycle<T>(pool: PoolSpec, wait: () => Promise<T>): Promise<T> {
    return this.deps.engine.whileWanting(pool, this.idleSetOf(pool), wait);
  }

  /** The pool's idle sandboxes in the store, as the engine sees them. */
  private idleSetOf(pool: PoolSpec): IdleSet<SandboxRecord> {
    let set = this.idleSets.get(pool.name);
    if (set) return set;
    const { store, starter, engine, now } = this.deps;
    set = {
      tidy: async () => {
        await this.renewIdleMemberships(pool);
        await this.deps.retireExpiredParked(pool);
      },
      // Every replica's warm-up starts count, or two replicas would each start the same shortfall.
      look: async () => {
        const starting = await store.countWarming(pool.name, now());
        const idle = await store.countIdle(pool.name);
        return { idle, starting };
      },
      target: () => {
        const short = engine.wantingOf(pool.name);
        // Only the pool's own minIdle may take a parked sandbox's place; the demand's reserve
        // above it waits for free places (a parked sandbox is a burst's best start).
        return {
          wanted: this.deps.effectiveMinIdle(pool) + short,
          promised: this.deps.sizeOf(pool).minIdle + short,
        };
      },
      start: () => starter.start(pool, "warm-up"),
      keep: (record) => this.keepIdle(pool, record),
      evictParked: () => this.deps.evictParked(pool),
    };
    this.idleSets.set(pool.name, set);
    return set;
  }

  /** Pushes a warm-up start idle: false when its place was reclaimed meanwhile (it goes). */
  private async keepIdle(pool: PoolSpec, record: SandboxRecord): Promise<boolean> {
    const at = this.deps.now();
    if (await this.deps.store.pushIdle(record, { until: at + IDLE_MEMBERSHIP_MS, now: at })) return true;
    // This replica stalled past the start's in-flight mark.
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
