/**
 * The retention job (scheduled as `usage-retention`; on BullMQ it fires once across all
 * replicas): rolls raw usage up per UTC day, then deletes raw events older than
 * retention.usageEventsDays (only days already rolled up) and audit rows older than
 * retention.auditDays.
 *
 * Each run re-rolls the last REROLL_DAYS days as well: an event can reach the store after its
 * day was first rolled up (a replica's buffer waited out a database outage), and re-rolling a
 * day whose raw events are all still there is exact. Days before the pruning horizon are
 * never re-rolled, since their raw events may be gone.
 */
import type { Logger } from "pino";
import { DAY_MS, floorTo, type UsageDailyRepository } from "../store/sql/usage-daily-repository.js";

export const USAGE_RETENTION_JOB = "usage-retention";
/** A day is rolled up once it ended this long ago: buffered events reach the store within seconds. */
const SETTLE_MS = 10 * 60_000;
const REROLL_DAYS = 2;

export interface RetentionSettings {
  usageEventsDays: number;
  auditDays: number;
}

export interface RetentionReport {
  rolledFrom: string | null;
  rolledUntil: string | null;
  eventsDeleted: number;
  auditDeleted: number;
}

export async function runRetention(
  repository: UsageDailyRepository,
  settings: RetentionSettings,
  now: Date,
  log?: Logger,
): Promise<RetentionReport> {
  const today = floorTo(now.getTime() - SETTLE_MS, DAY_MS);
  const pruneBefore = floorTo(now.getTime(), DAY_MS) - settings.usageEventsDays * DAY_MS;
  const rolledUntil = (await repository.rolledUntil()).getTime();
  const oldest = rolledUntil > 0 ? undefined : await repository.oldestEventDay();
  const start = Math.max(
    rolledUntil > 0 ? rolledUntil - REROLL_DAYS * DAY_MS : (oldest?.getTime() ?? today),
    // Never re-roll a day whose raw events retention may already have pruned.
    rolledUntil > 0 ? Math.min(pruneBefore, rolledUntil) : 0,
  );
  let rolled: { from: number; to: number } | undefined;
  if (start < today) {
    await repository.rollUp(new Date(start), new Date(today));
    rolled = { from: start, to: today };
  }
  const eventsDeleted = await repository.pruneEvents(new Date(pruneBefore));
  const auditDeleted = await repository.pruneAudit(new Date(now.getTime() - settings.auditDays * DAY_MS));
  const report: RetentionReport = {
    rolledFrom: rolled ? new Date(rolled.from).toISOString() : null,
    rolledUntil: rolled ? new Date(rolled.to).toISOString() : null,
    eventsDeleted,
    auditDeleted,
  };
  log?.info(report, "usage rolled up and retention applied");
  return report;
}
