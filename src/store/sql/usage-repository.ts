/**
 * Durable per-workspace usage. Inserts are idempotent on the event id, so the metering
 * buffer may re-flush a batch whose outcome it never learned (a crash, a timeout) without
 * double-counting.
 */
import type { Kysely } from "kysely";
import { malformed } from "../../contract/error-codes.js";
import { issueProblems } from "../../contract/schemas.js";
import type { Database } from "./database-types.js";
import { type UsageEvent, type UsageKind, type UsageSummaryRow, usageEventSchema } from "./usage-event.js";

export type { UsageEvent, UsageKind, UsageSummaryRow } from "./usage-event.js";

// 9 parameters a row: well under Postgres's 65,535 bind parameters a statement.
const ROWS_PER_STATEMENT = 1_000;

export class UsageRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Stores the events not stored before; returns how many were new. Chunks are not one
   * transaction: a failure part-way leaves a prefix stored, which the retry then skips.
   */
  async insert(events: readonly UsageEvent[]): Promise<number> {
    const parsed = usageEventSchema.array().safeParse(events);
    if (!parsed.success) throw malformed(issueProblems(parsed.error));
    let inserted = 0;
    for (let start = 0; start < parsed.data.length; start += ROWS_PER_STATEMENT) {
      const rows = parsed.data.slice(start, start + ROWS_PER_STATEMENT).map((event) => ({
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
      const result = await this.db
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
