/**
 * Pool sizes at run time. A pool's `minIdle` and `maxTotal` start as configured; an operator
 * may change them (`PATCH /admin/v1/pools/{name}`). A change is validated, persisted with its
 * audit row (a restart keeps it), and announced on a channel every replica listens to, so it
 * is in force everywhere within a second; each replica also reloads on its own now and then,
 * so a lost announcement only delays a change. The PoolManager reads sizes through `sizeOf`
 * on every warm-up and every start, never from the configuration directly.
 */
import type { Logger } from "pino";
import { z } from "zod";
import { malformed, SandpoolError } from "../contract/error-codes.js";
import { issueProblems } from "../contract/schemas.js";
import type { PoolSpec } from "../runtime/sandbox-runtime.js";
import { announceCommitted } from "../store/coordination/announce.js";
import type { Broadcast } from "../store/coordination/broadcast.js";
import type { PoolSizeOverride, PoolSizeRepository } from "../store/sql/pool-size-repository.js";

export const POOL_SIZES_CHANNEL = "sandpool:pool-sizes-changed";
/** The largest size an operator may give a pool at run time: a typo must not start a thousand containers. */
export const MAX_POOL_SIZE = 1_000;
/** How often a replica reloads the sizes even without an announcement. */
const RELOAD_EVERY_MS = 30_000;

export interface PoolSizes {
  minIdle: number;
  maxTotal: number;
}

/** What the admin API shows of a pool's sizes: in force, as configured, and who changed them. */
export interface PoolSizesView extends PoolSizes {
  configured: PoolSizes;
  /** The run-time change in force, when there is one (null sizes: as configured). */
  override: PoolSizeOverride | null;
}

const size = (min: number) => z.number().int().min(min).max(MAX_POOL_SIZE).nullable().optional();
/** A resize: either size or both; null puts a size back to its configured value. */
export const poolResizeSchema = z
  .strictObject({ minIdle: size(0), maxTotal: size(1) })
  .refine((edit) => edit.minIdle !== undefined || edit.maxTotal !== undefined, {
    message: "give minIdle, maxTotal or both",
  });

export class RuntimePoolSizes {
  private readonly configured: Map<string, PoolSpec>;
  private overrides = new Map<string, PoolSizeOverride>();
  private loadedAt = 0;
  private readonly now: () => number;
  private onResized: ((pool: string) => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    pools: readonly PoolSpec[],
    private readonly repository: PoolSizeRepository,
    private readonly store: Broadcast,
    private readonly log: Logger,
    now?: () => number,
  ) {
    this.configured = new Map(pools.map((pool) => [pool.name, pool]));
    this.now = now ?? Date.now;
  }

  /** Loads the persisted sizes and follows every replica's changes from now on. */
  /**
   * Loads the persisted sizes and follows every replica's changes from now on: announced
   * ones at once, and any announcement lost (a Redis reconnect) by reloading every 30 s on
   * this replica's own timer (a scheduled job runs on one replica a tick, not on each).
   * `onResized` runs on the replica that made a change only: warming the pool everywhere at
   * once would start one shortfall per replica.
   */
  async start(onResized?: (pool: string) => void): Promise<void> {
    this.onResized = onResized;
    await this.store.subscribe(POOL_SIZES_CHANNEL, () => {
      this.reload().catch((error) => this.log.error({ err: error }, "could not reload pool sizes"));
    });
    await this.reload();
    this.timer = setInterval(() => {
      this.reloadIfStale().catch((error) => this.log.warn({ err: error }, "could not reload pool sizes"));
    }, RELOAD_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async reload(): Promise<void> {
    const rows = await this.repository.list();
    this.overrides = new Map(
      rows.filter((row) => this.configured.has(row.pool)).map((row) => [row.pool, row]),
    );
    this.loadedAt = this.now();
  }

  /** Reloads when the last load is old: the safety net under a lost announcement. */
  async reloadIfStale(): Promise<void> {
    if (this.now() - this.loadedAt >= RELOAD_EVERY_MS) await this.reload();
  }

  /** The sizes in force for a pool. */
  sizeOf(pool: Pick<PoolSpec, "name" | "minIdle" | "maxTotal">): PoolSizes {
    const override = this.overrides.get(pool.name);
    return {
      minIdle: override?.minIdle ?? pool.minIdle,
      maxTotal: override?.maxTotal ?? pool.maxTotal,
    };
  }

  view(name: string): PoolSizesView {
    const pool = this.pool(name);
    return {
      ...this.sizeOf(pool),
      configured: { minIdle: pool.minIdle, maxTotal: pool.maxTotal },
      override: this.overrides.get(name) ?? null,
    };
  }

  /**
   * Changes a pool's sizes: 404 for an unknown pool, 422 (every problem listed) for a bad
   * edit or minIdle above maxTotal once applied. Persisted, audited and announced.
   */
  async resize(name: string, edit: unknown, actor: string): Promise<PoolSizesView> {
    const pool = this.pool(name);
    const parsed = poolResizeSchema.safeParse(edit);
    if (!parsed.success) throw malformed(issueProblems(parsed.error));
    // Merged with the stored sizes under a row lock: two resizes at once (of minIdle on one
    // replica, maxTotal on another) both count, and minIdle <= maxTotal holds for the result.
    await this.repository.update(name, actor, (before) => {
      const next = {
        minIdle: parsed.data.minIdle !== undefined ? parsed.data.minIdle : before.minIdle,
        maxTotal: parsed.data.maxTotal !== undefined ? parsed.data.maxTotal : before.maxTotal,
      };
      const inForce = { minIdle: next.minIdle ?? pool.minIdle, maxTotal: next.maxTotal ?? pool.maxTotal };
      if (inForce.minIdle > inForce.maxTotal) {
        throw new SandpoolError(
          "request.malformed",
          `minIdle (${inForce.minIdle}) cannot exceed maxTotal (${inForce.maxTotal})`,
        );
      }
      const wasInForce = {
        minIdle: before.minIdle ?? pool.minIdle,
        maxTotal: before.maxTotal ?? pool.maxTotal,
      };
      return { sizes: next, detail: { before: wasInForce, after: inForce } };
    });
    await announceCommitted(this.store, POOL_SIZES_CHANNEL, name);
    await this.reload();
    this.onResized?.(name);
    return this.view(name);
  }

  private pool(name: string): PoolSpec {
    const pool = this.configured.get(name);
    if (!pool) throw new SandpoolError("request.not_found", `no pool named '${name}'`);
    return pool;
  }
}
