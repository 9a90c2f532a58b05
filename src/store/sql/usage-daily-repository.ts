/**
 * Usage rolled up per UTC day (table usage_daily, migration 0008; usage_events is read by time through the index of 0009), what reports read, and the
 * pruning of what retention lets go. Raw usage_events are summed into one row per workspace,
 * day, kind, tool and image; only days the rollup has covered (before `rolled_until`) may have
 * their raw events deleted, so pruning never loses a total.
 *
 * Queries are plain SQL through Kysely's `sql` tag: they are aggregates the query builder
 * adds nothing to, and they run the same on Postgres and PGlite.
 */
import { type Kysely, type RawBuilder, sql } from "kysely";
import type { Database } from "./database-types.js";

export const DAY_MS = 86_400_000;
export const HOUR_MS = 3_600_000;

/** One aggregate row: a bucket (hour or day) of one kind, tool and image. */
export interface UsageAggregateRow {
  start: Date;
  kind: string;
  /** '' when the events have no tool. */
  tool: string;
  /** The session's image; '' when unknown (its session_created event is gone or lacks one). */
  image: string;
  events: number;
  /** Sum of the quantities (milliseconds or bytes, by kind). */
  quantity: number;
  /** The largest single quantity (what a peak, such as sandbox_memory_peak, means). */
  quantityMax: number;
}

/**
 * The pool's 5 s statement limit suits requests, not a day's rollup or a prune batch of a
 * large table: lift it for this transaction only (SET LOCAL ends with it).
 */
export async function allowLongStatements(tx: Kysely<Database>): Promise<void> {
  await sql`SET LOCAL statement_timeout = '5min'`.execute(tx);
}

export function floorTo(ms: number, bucketMs: number): number {
  return Math.floor(ms / bucketMs) * bucketMs;
}

interface RawAggregate {
  start: Date | string;
  kind: string;
  tool: string;
  image: string;
  events: string | number;
  quantity: string | number;
  quantity_max: string | number;
}

function toAggregate(row: RawAggregate): UsageAggregateRow {
  return {
    start: new Date(row.start),
    kind: row.kind,
    tool: row.tool,
    image: row.image,
    events: Number(row.events),
    quantity: Number(row.quantity),
    quantityMax: Number(row.quantity_max),
  };
}

export class UsageDailyRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** The end of the days rolled up so far (the epoch when the rollup never ran). */
  async rolledUntil(db: Kysely<Database> = this.db): Promise<Date> {
    const { rows } = await sql<{ rolled_until: Date | string }>`
      SELECT rolled_until FROM usage_rollup_state WHERE id = 1`.execute(db);
    return rows[0] ? new Date(rows[0].rolled_until) : new Date(0);
  }

  /**
   * Rolls up every whole UTC day from `from` to `to` (day boundaries), replacing what the
   * rollup held for those days. One transaction per day, which also moves `rolled_until` past
   * that day: a report never sees a day half rolled, a first run over years of history never
   * has to fit in one statement, and a run cut short keeps the days it finished.
   */
  async rollUp(from: Date, to: Date): Promise<void> {
    for (let day = floorTo(from.getTime(), DAY_MS); day < to.getTime(); day += DAY_MS) {
      await this.rollUpDay(
        new Date(Math.max(day, from.getTime())),
        new Date(Math.min(day + DAY_MS, to.getTime())),
      );
    }
  }

  private async rollUpDay(from: Date, to: Date): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await allowLongStatements(tx);
      await sql`DELETE FROM usage_daily WHERE day_start >= ${from} AND day_start < ${to}`.execute(tx);
      // ON CONFLICT replaces: a second run rolling the same day at the same time (it waits on
      // the first's rows) writes the same sums instead of failing on the primary key.
      await sql`
        INSERT INTO usage_daily (workspace_id, day_start, kind, tool, image, events, quantity, quantity_max)
        SELECT e.workspace_id,
               to_timestamp(floor(extract(epoch FROM e.occurred_at) / 86400) * 86400),
               e.kind, coalesce(e.tool, ''), coalesce(s.detail ->> 'image', ''),
               sum(e.events), sum(e.quantity), max(e.quantity)
        FROM usage_events e
        LEFT JOIN LATERAL (
          SELECT detail FROM usage_events s
          WHERE s.workspace_id = e.workspace_id AND s.session_id = e.session_id AND s.kind = 'session_created'
          LIMIT 1
        ) s ON true
        WHERE e.occurred_at >= ${from} AND e.occurred_at < ${to}
        GROUP BY 1, 2, 3, 4, 5
        ON CONFLICT (workspace_id, day_start, kind, tool, image) DO UPDATE SET
          events = excluded.events, quantity = excluded.quantity, quantity_max = excluded.quantity_max`.execute(
        tx,
      );
      await sql`
        INSERT INTO usage_rollup_state (id, rolled_until) VALUES (1, ${to})
        ON CONFLICT (id) DO UPDATE SET rolled_until = greatest(usage_rollup_state.rolled_until, excluded.rolled_until)`.execute(
        tx,
      );
    });
  }

  /** The start of the UTC day of the oldest raw event, if any. */
  async oldestEventDay(): Promise<Date | undefined> {
    const { rows } = await sql<{ oldest: Date | string | null }>`
      SELECT min(occurred_at) AS oldest FROM usage_events`.execute(this.db);
    const oldest = rows[0]?.oldest;
    return oldest == null ? undefined : new Date(floorTo(new Date(oldest).getTime(), DAY_MS));
  }

  /**
   * Deletes raw events before `before` (never past what is rolled up), in batches. A
   * session_created event whose session has not ended before the cutoff stays:
   * reconciliation rebuilds a lost lease from it, and a later day's rollup reads its image.
   * Two phases, because batches delete in no particular order: were both kinds pruned
   * together, one batch could take a session's session_ended and leave its session_created
   * looking open forever. So the ended sessions' session_created events go first, while their
   * session_ended is still there to show they ended. Returns how many were deleted.
   */
  async pruneEvents(before: Date, batch = 5_000): Promise<number> {
    const rolledUntil = await this.rolledUntil();
    const cutoff = new Date(Math.min(before.getTime(), rolledUntil.getTime()));
    const endedSessionsStarts = sql`
      SELECT e.event_id FROM usage_events e
      WHERE e.occurred_at < ${cutoff} AND e.kind = 'session_created'
        AND EXISTS (
          SELECT 1 FROM usage_events x
          WHERE x.workspace_id = e.workspace_id AND x.session_id = e.session_id
            AND x.kind = 'session_ended' AND x.occurred_at < ${cutoff})
      LIMIT ${batch}`;
    const others = sql`
      SELECT e.event_id FROM usage_events e
      WHERE e.occurred_at < ${cutoff} AND e.kind <> 'session_created'
      LIMIT ${batch}`;
    // The ids of calls written (usage_event_ids) are kept as long as their rows are.
    const seenIds = sql`SELECT event_id FROM usage_event_ids WHERE seen_at < ${cutoff} LIMIT ${batch}`;
    const deleted =
      (await this.deleteInBatches(endedSessionsStarts, batch)) + (await this.deleteInBatches(others, batch));
    await this.deleteInBatches(seenIds, batch, "usage_event_ids");
    return deleted;
  }

  private async deleteInBatches(
    selectIds: RawBuilder<unknown>,
    batch: number,
    table = "usage_events",
  ): Promise<number> {
    let deleted = 0;
    for (;;) {
      const result = await this.db.transaction().execute(async (tx) => {
        await allowLongStatements(tx);
        return sql`DELETE FROM ${sql.table(table)} WHERE event_id IN (${selectIds})`.execute(tx);
      });
      const count = Number(result.numAffectedRows ?? 0n);
      deleted += count;
      if (count < batch) return deleted;
    }
  }

  /** Deletes audit rows (policy, API keys, operators' actions) older than `before`. */
  async pruneAudit(before: Date): Promise<number> {
    let deleted = 0;
    for (const table of ["policy_audit", "api_key_audit", "admin_audit"]) {
      const result = await sql`DELETE FROM ${sql.table(table)} WHERE at < ${before}`.execute(this.db);
      deleted += Number(result.numAffectedRows ?? 0n);
    }
    return deleted;
  }

  /** Rolled-up rows of one workspace for the days starting in [from, to). */
  async dailyRows(workspace: string, from: Date, to: Date): Promise<UsageAggregateRow[]> {
    if (from.getTime() >= to.getTime()) return [];
    const { rows } = await sql<RawAggregate>`
      SELECT day_start AS start, kind, tool, image, events, quantity, quantity_max
      FROM usage_daily
      WHERE workspace_id = ${workspace} AND day_start >= ${from} AND day_start < ${to}`.execute(this.db);
    return rows.map(toAggregate);
  }

  /** Raw events of one workspace in [from, to), summed per bucket of `bucketMs`, kind, tool and image. */
  async rawRows(workspace: string, from: Date, to: Date, bucketMs: number): Promise<UsageAggregateRow[]> {
    if (from.getTime() >= to.getTime()) return [];
    const bucketSeconds = bucketMs / 1000;
    const { rows } = await sql<RawAggregate>`
      SELECT to_timestamp(floor(extract(epoch FROM e.occurred_at) / ${bucketSeconds}) * ${bucketSeconds}) AS start,
             e.kind, coalesce(e.tool, '') AS tool, coalesce(s.detail ->> 'image', '') AS image,
             sum(e.events) AS events, sum(e.quantity) AS quantity, max(e.quantity) AS quantity_max
      FROM usage_events e
      LEFT JOIN LATERAL (
        SELECT detail FROM usage_events s
        WHERE s.workspace_id = e.workspace_id AND s.session_id = e.session_id AND s.kind = 'session_created'
        LIMIT 1
      ) s ON true
      WHERE e.workspace_id = ${workspace} AND e.occurred_at >= ${from} AND e.occurred_at < ${to}
      GROUP BY 1, 2, 3, 4`.execute(this.db);
    return rows.map(toAggregate);
  }
}
