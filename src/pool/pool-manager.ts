/**
 * The warm pool. Each pool keeps `minIdle` started sandboxes (each with its inner session
 * already created) so a lease is one atomic pop; a dry pool below `maxTotal` cold-starts a
 * sandbox within the pool's deadline; a pool at `maxTotal` refuses with 503. Membership in
 * the store caps a pool's size across replicas. A pool whose starts keep failing backs off
 * exponentially, so an image that cannot start does not spin. Sizes are read through
 * `sizes` on every warm-up and start, so an operator's resize is obeyed without a restart.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import type { SandboxClient } from "../forward/sandbox-client.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { PoolSpec, SandboxRuntime, SandboxUsage } from "../runtime/sandbox-runtime.js";
import type { CoordinationStore } from "../store/coordination/coordination-store.js";
import type { MemberHold, SandboxRecord } from "../store/coordination/records.js";
import type { PoolSizes } from "./pool-sizes.js";
import { StartBackoff } from "./start-backoff.js";

/** How long an idle sandbox counts against its pool before it must be confirmed again. */
export const IDLE_MEMBERSHIP_MS = 10 * 60_000;
/** How long ending a session waits for a sandbox's usage before it goes on without it. */
const USAGE_TIMEOUT_MS = 5_000;

export interface PoolManagerDeps {
  pools: PoolSpec[];
  store: CoordinationStore;
  runtime: SandboxRuntime;
  client: SandboxClient;
  metrics: GatewayMetrics;
  log: Logger;
  /** The sizes in force (they may change at run time); the configured ones without it. */
  sizes?: { sizeOf(pool: PoolSpec): PoolSizes };
  now?: () => number;
}

/** What this replica has seen of a pool since it started. */
export interface PoolCounters {
  warmLeases: number;
  coldLeases: number;
  warmupFailures: number;
}

export interface LeasedSandbox {
  record: SandboxRecord;
  warm: boolean;
}

export class PoolManager {
  private readonly pools: Map<string, PoolSpec>;
  private readonly starting = new Map<string, number>();
  private readonly backoff = new Map<string, StartBackoff>();
  private readonly counters = new Map<string, PoolCounters>();
  private readonly now: () => number;

  constructor(private readonly deps: PoolManagerDeps) {
    this.pools = new Map(deps.pools.map((pool) => [pool.name, pool]));
    this.now = deps.now ?? Date.now;
    for (const pool of deps.pools) {
      this.backoff.set(pool.name, new StartBackoff());
      this.counters.set(pool.name, { warmLeases: 0, coldLeases: 0, warmupFailures: 0 });
    }
  }

  /** The sizes in force for a pool. */
  sizeOf(pool: PoolSpec): PoolSizes {
    return this.deps.sizes?.sizeOf(pool) ?? { minIdle: pool.minIdle, maxTotal: pool.maxTotal };
  }

  /** Leases and failed starts of a pool on this replica since it started. */
  countersOf(name: string): PoolCounters {
    return { ...(this.counters.get(name) ?? { warmLeases: 0, coldLeases: 0, warmupFailures: 0 }) };
  }

  list(): PoolSpec[] {
    return [...this.pools.values()];
  }

  /**
   * The pool serving `image` in `resourceClass`. Egress is a permission, never a default:
   * a workspace allowed egress gets an egress pool when there is one (else the isolated
   * one); a workspace without it never gets an egress pool.
   */
  find(image: string, resourceClass: string, egressAllowed = false): PoolSpec | undefined {
    const candidates = [...this.pools.values()].filter(
      (pool) => pool.image === image && pool.resourceClass === resourceClass,
    );
    const isolated = candidates.find((pool) => !pool.egress);
    return egressAllowed ? (candidates.find((pool) => pool.egress) ?? isolated) : isolated;
  }

  /**
   * A ready sandbox for one session: warm from the pool (its place held for `hold` in the
   * same step), else cold-started (the caller then holds it: `holdMembership`), else 503.
   */
  async lease(pool: PoolSpec, hold: MemberHold): Promise<LeasedSandbox> {
    const started = process.hrtime.bigint();
    const idle = await this.deps.store.leaseIdle(pool.name, hold);
    let leased: LeasedSandbox;
    if (idle) {
      leased = { record: idle, warm: true };
    } else {
      const record = await this.startSandbox(pool);
      if (!record) {
        throw new SandpoolError("capacity.exhausted", `the '${pool.name}' pool is at capacity`, {
          retryAfterSeconds: 2,
        });
      }
      leased = { record, warm: false };
    }
    const counters = this.counters.get(pool.name);
    if (counters) counters[leased.warm ? "warmLeases" : "coldLeases"]++;
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    this.deps.metrics.leaseDuration.observe(
      { pool: pool.name, start: leased.warm ? "warm" : "cold" },
      seconds,
    );
    return leased;
  }

  /** Keeps a leased sandbox counted against its pool for `hold`'s workspace until `hold.until`. */
  holdMembership(record: SandboxRecord, hold: MemberHold): Promise<void> {
    return this.deps.store.holdMember(record.pool, record.sandboxId, hold);
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

  /** Destroys a sandbox and frees its place in the pool. Idempotent. */
  async retire(record: Pick<SandboxRecord, "pool" | "sandboxId" | "runtimeId">): Promise<void> {
    await this.deps.runtime.destroy(record.runtimeId);
    await this.deps.store.removeMember(record.pool, record.sandboxId);
  }

  /** Tops every pool up to its `minIdle`, a few starts at a time. */
  async warmAll(): Promise<void> {
    await Promise.all(this.list().map((pool) => this.warm(pool)));
  }

  async warm(pool: PoolSpec): Promise<void> {
    const backoff = this.backoff.get(pool.name)!;
    // Idle sandboxes keep counting against the pool's cap for as long as they wait.
    for (const idle of await this.deps.store.listIdle(pool.name)) {
      await this.deps.store.renewMember(pool.name, idle.sandboxId, this.now() + IDLE_MEMBERSHIP_MS);
    }
    for (;;) {
      if (!backoff.mayStart(this.now())) return;
      const idle = (await this.deps.store.listIdle(pool.name)).length;
      const starting = this.starting.get(pool.name) ?? 0;
      const wanted = Math.min(this.sizeOf(pool).minIdle - idle - starting, pool.warmupConcurrency - starting);
      if (wanted <= 0) return;
      const results = await Promise.all(
        Array.from({ length: wanted }, async () => {
          const record = await this.startSandbox(pool).catch(() => undefined);
          if (!record) return false;
          await this.deps.store.renewMember(pool.name, record.sandboxId, this.now() + IDLE_MEMBERSHIP_MS);
          await this.deps.store.pushIdle(record);
          return true;
        }),
      );
      if (!results.every(Boolean)) return; // at capacity, or failing: try again on the next tick
    }
  }

  /** Counts for the pool gauges: idle and starting here, leased from the store's membership. */
  async refreshGauges(): Promise<void> {
    for (const pool of this.list()) {
      const idle = (await this.deps.store.listIdle(pool.name)).length;
      const members = await this.deps.store.countMembers(pool.name, this.now());
      const starting = this.starting.get(pool.name) ?? 0;
      this.deps.metrics.poolSandboxes.set({ pool: pool.name, state: "idle" }, idle);
      this.deps.metrics.poolSandboxes.set({ pool: pool.name, state: "starting" }, starting);
      this.deps.metrics.poolSandboxes.set(
        { pool: pool.name, state: "leased" },
        Math.max(0, members - idle - starting),
      );
    }
  }

  /**
   * Starts one sandbox and creates its inner session. Undefined when the pool is at its
   * cap; throws when the start fails (after cleaning up what it started).
   */
  private async startSandbox(pool: PoolSpec): Promise<SandboxRecord | undefined> {
    const sandboxId = randomBytes(12).toString("hex");
    const deadline = this.now() + pool.coldStartTimeoutMs;
    const counted = await this.deps.store.addMember(
      pool.name,
      sandboxId,
      this.sizeOf(pool).maxTotal,
      deadline + 5_000,
      this.now(),
    );
    if (!counted) return undefined;
    this.starting.set(pool.name, (this.starting.get(pool.name) ?? 0) + 1);
    let runtimeId: string | undefined;
    try {
      const started = await this.deps.runtime.start({ sandboxId, pool, deadline });
      runtimeId = started.runtimeId;
      const innerSessionId = await this.deps.client.createInnerSession(
        started.endpoint,
        Math.max(1, deadline - this.now()),
      );
      this.backoff.get(pool.name)!.succeeded();
      return {
        sandboxId,
        pool: pool.name,
        endpoint: started.endpoint,
        runtimeId,
        innerSessionId,
        createdAt: this.now(),
      };
    } catch (error) {
      this.deps.metrics.warmupFailures.inc({ pool: pool.name });
      const counters = this.counters.get(pool.name);
      if (counters) counters.warmupFailures++;
      const delayMs = this.backoff.get(pool.name)!.failed(this.now());
      this.deps.log.error({ err: error, pool: pool.name, retryInMs: delayMs }, "sandbox start failed");
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
      this.starting.set(pool.name, (this.starting.get(pool.name) ?? 1) - 1);
    }
  }
}
