/**
 * Durable per-workspace usage. Inserts are idempotent on the event id, so the metering
 * buffer may re-flush a batch whose outcome it never learned (a crash, a timeout) without
 * double-counting.
 */
import type { Kysely } from "kysely";
import type { z } from "zod";
import { malformed } from "../../contract/error-codes.js";
import { issueProblems } from "../../contract/schemas.js";
import type { Database } from "./database-types.js";
import { type UsageEvent, type UsageKind, type UsageSummaryRow, usageEventSchema } from "./usage-event.js";

export type { UsageEvent, UsageKind, UsageSummaryRow } from "./usage-event.js";

// 9 parameters a row: well under Postgres's 65,535 bind parameters a statement.
const ROWS_PER_STATEMENT = 1_000;
// One parameter an id.
const IDS_PER_STATEMENT = 10_000;

/** A usage event as parsed (its defaults applied). */
type UsageEventRow = z.output<typeof usageEventSchema>;

export class UsageRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Stores the events not stored before; returns how many rows were new. A record with
   * `parts` (calls or transfers merged) counts only its parts no write has counted before
   * (usage_event_ids), in the same transaction as its row: an event met again in another
   * batch counts once. Chunks of records without parts are not one transaction: a failure
   * part-way leaves a prefix stored, which the retry then skips.
   */
  async insert(events: readonly UsageEvent[]): Promise<number> {
    const parsed = usageEventSchema.array().safeParse(events);
    if (!parsed.success) throw malformed(issueProblems(parsed.error));
    if (!parsed.data.some((event) => event.parts !== undefined)) return this.insertRows(this.db, parsed.data);
    return this.db.transaction().execute(async (trx) => {
      const ids = parsed.data.flatMap((event) => (event.parts ?? []).map((part) => part.eventId));
      const fresh = new Set<string>();
      for (let start = 0; start < ids.length; start += IDS_PER_STATEMENT) {
        const added = await trx
          .insertInto("usage_event_ids")
          .values(ids.slice(start, start + IDS_PER_STATEMENT).map((eventId) => ({ event_id: eventId })))
          .onConflict((conflict) => conflict.column("event_id").doNothing())
          .returning("event_id")
          .execute();
        for (const row of added) fresh.add(row.event_id);
      }
      const rows: typeof parsed.data = [];
      for (const event of parsed.data) {
        if (event.parts === undefined) {
          rows.push(event);
          continue;
        }
        const parts = event.parts.filter((part) => fresh.has(part.eventId));
        if (parts.length === 0) continue;
        rows.push({
          ...event,
          eventId: parts[0]!.eventId,
          quantity: parts.reduce((sum, part) => sum + part.quantity, 0),
          events: parts.length,
        });
      }
      return this.insertRows(trx, rows);
    });
  }

  private async insertRows(db: Kysely<Database>, events: readonly UsageEventRow[]): Promise<number> {
    let inserted = 0;
    for (let start = 0; start < events.length; start += ROWS_PER_STATEMENT) {
      const rows = events.slice(start, start + ROWS_PER_STATEMENT).map((event) => ({
        event_id: event.eventId,
        workspace_id: event.workspaceId,
        session_id: event.sessionId,
        kind: event.kind,
        tool: event.tool ?? null,
        quantity: event.quantity,
        detail: event.detail == null ? null : JSON.stringify(event.detail),
        occurred_at: event.occurredAt,
        sandbox_id: event.sandboxId ?? null,
        events: event.events,
      }));
      const result = await db
        .insertInto("usage_events")
        .values(rows)
        .onConflict((conflict) => conflict.column("event_id").doNothing())
        .executeTakeFirst();
      inserted += Number(result.numInsertedOrUpdatedRows ?? 0n);
    }
    return inserted;
  }

  /**
   * The lease recorded when a session started on `sandboxId`, if that session has no end
   * event: what reconciliation rebuilds when Redis has lost it.
   */
  async openSessionOnSandbox(sandboxId: string): Promise<unknown | undefined> {
    const row = await this.db
      .selectFrom("usage_events as started")
      .select("started.detail")
      .where("started.kind", "=", "session_created")
      .where("started.sandbox_id", "=", sandboxId)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("usage_events as ended")
              .select("ended.event_id")
              .where("ended.kind", "=", "session_ended")
              .whereRef("ended.session_id", "=", "started.session_id")
              .whereRef("ended.workspace_id", "=", "started.workspace_id"),
          ),
        ),
      )
      .orderBy("started.occurred_at", "desc")
      .limit(1)
      .executeTakeFirst();
    if (!row?.detail) return undefined;
    const detail = (typeof row.detail === "string" ? JSON.parse(row.detail) : row.detail) as {
      lease?: unknown;
    };
    return detail.lease;
  }

  /** Events of one workspace with `from <= occurredAt < to`, per kind and tool. */
  async summary(workspaceId: string, from: Date, to: Date): Promise<UsageSummaryRow[]> {
    const rows = await this.db
      .selectFrom("usage_events")
      .select((eb) => [
        "kind",
        "tool",
        eb.fn.sum<string | number>("events").as("count"),
        eb.fn.sum<string | number>("quantity").as("quantity"),
      ])
      .where("workspace_id", "=", workspaceId)
      .where("occurred_at", ">=", from)
      .where("occurred_at", "<", to)
      .groupBy(["kind", "tool"])
      .orderBy("kind")
      .orderBy("tool")
      .execute();
    // pg hands back count and sum as strings, PGlite as numbers or strings: normalise.
    return rows.map((row) => ({
      kind: row.kind as UsageKind,
      tool: row.tool,
      count: Number(row.count),
      quantity: Number(row.quantity),
    }));
  }
}
