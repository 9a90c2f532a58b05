/**
 * What a pool held when it refused a lease at capacity: an operator's first question about a
 * 503. A flood of refusals (a burst past `maxTotal`) must neither cost a store read per
 * refusal nor fill the log, so each pool logs at most one line a second, with the count of
 * refusals since its last line; and the 503 never waits for the line's store reads.
 */
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";

/** At most one refusal line per pool in this many milliseconds. */
export const REFUSAL_LOG_INTERVAL_MS = 1_000;

/** What the pool held, read from the store when a line is due. */
export interface PoolHolding {
  members: number;
  maxTotal: number;
  idle: number;
  /** The owners of its parked sandboxes. */
  parked: (string | undefined)[];
  turningOver: number;
}

/** What `pool` holds, read when a line is due. */
export async function readHolding(
  store: Pick<PoolLedger, "countMembers" | "countIdle" | "listParked">,
  pool: string,
  now: number,
  known: { maxTotal: number; turningOver: Promise<number> },
): Promise<PoolHolding> {
  const [members, idle, parked, turningOver] = await Promise.all([
    store.countMembers(pool, now),
    store.countIdle(pool),
    store.listParked(pool),
    known.turningOver,
  ]);
  return {
    members,
    maxTotal: known.maxTotal,
    idle,
    parked: parked.map((record) => record.owner),
    turningOver,
  };
}

export class RefusalLog {
  /** Per pool: when its last line was written, and refusals not logged since. */
  private readonly lastLine = new Map<string, { at: number; unlogged: number }>();

  constructor(
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Records a refusal of `workspace`'s lease on `pool` after `waitedMs`. Writes a line when
   * the pool's last one is older than the interval, reading `holding` only then; never throws
   * or waits.
   */
  refused(pool: string, workspace: string, waitedMs: number, holding: () => Promise<PoolHolding>): void {
    const now = this.now();
    const last = this.lastLine.get(pool);
    if (last && now - last.at < REFUSAL_LOG_INTERVAL_MS) {
      last.unlogged += 1;
      return;
    }
    const refusedSinceLastLine = last?.unlogged ?? 0;
    this.lastLine.set(pool, { at: now, unlogged: 0 });
    holding().then(
      (held) =>
        this.log.warn(
          { pool, workspace, ...held, waitedMs: Math.round(waitedMs), refusedSinceLastLine },
          "a lease was refused: the pool is at capacity",
        ),
      (error: unknown) =>
        this.log.warn(
          { pool, workspace, err: error, waitedMs: Math.round(waitedMs), refusedSinceLastLine },
          "a lease was refused: the pool is at capacity (what it held could not be read)",
        ),
    );
  }
}

/** The 503 of a lease that found its pool at `maxTotal` with nothing turning over: what raises it. */
export function poolAtCapacity(pool: string, maxTotal: number): SandpoolError {
  return new SandpoolError(
    "capacity.exhausted",
    `the '${pool}' pool is at capacity (its maxTotal, ${maxTotal}, raises it: \`sandpool pools resize\` or the pool's config)`,
    { retryAfterSeconds: 2 },
  );
}
