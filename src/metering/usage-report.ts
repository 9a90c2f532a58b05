/**
 * Usage reports (`GET /admin/v1/usage`): one workspace's usage per hour or per UTC day.
 * Days the rollup has covered are read from usage_daily (a few rows per day, kept after raw
 * events are pruned); later ones, and every hourly report, from raw usage_events. Buckets
 * cover whole hours or days: `since` is rounded down to its bucket's start and `until` up to
 * its bucket's end, and every bucket in between is listed, empty ones too.
 */
import type { z } from "zod";
import { SandpoolError } from "../contract/error-codes.js";
import {
  DAY_MS,
  floorTo,
  HOUR_MS,
  type UsageAggregateRow,
  type UsageDailyRepository,
} from "../store/sql/usage-daily-repository.js";
import type { usageReportResultSchema } from "./usage-report-schema.js";

export type UsageBucketSize = "hour" | "day";
/** The most buckets one report lists (about 41 days by hour, 2.7 years by day). */
export const MAX_USAGE_BUCKETS = 1_000;

/** A report as the admin API answers it: its schema is the one description. */
export type UsageReport = z.output<typeof usageReportResultSchema>;
export type UsageTotals = UsageReport["totals"];
export type UsageBucket = UsageReport["buckets"][number];

const bucketMsOf: Record<UsageBucketSize, number> = { hour: HOUR_MS, day: DAY_MS };

/** The window a report covers: `since` and `until` rounded out to whole buckets, validated. */
export function reportWindow(since: Date, until: Date, by: UsageBucketSize): { from: Date; to: Date } {
  const size = bucketMsOf[by];
  if (since.getTime() >= until.getTime())
    throw new SandpoolError("request.malformed", "since must be before until");
  const from = floorTo(since.getTime(), size);
  const to = floorTo(until.getTime() - 1, size) + size;
  const buckets = (to - from) / size;
  if (buckets > MAX_USAGE_BUCKETS)
    throw new SandpoolError(
      "request.malformed",
      `the window holds ${buckets} ${by}s; a report lists ${MAX_USAGE_BUCKETS} at most (narrow since/until or use by=day)`,
    );
  return { from: new Date(from), to: new Date(to) };
}

export class UsageReports {
  constructor(
    private readonly repository: UsageDailyRepository,
    /** Writes this replica's buffered events first, so what an operator just did shows up. */
    private readonly flush: () => Promise<void> = async () => {},
  ) {}

  async report(workspace: string, since: Date, until: Date, by: UsageBucketSize): Promise<UsageReport> {
    const { from, to } = reportWindow(since, until, by);
    await this.flush();
    let rows: UsageAggregateRow[];
    if (by === "day") {
      // Rolled-up days from the rollup, the rest from raw events: the split never counts twice.
      const rolledUntil = await this.repository.rolledUntil();
      const split = new Date(Math.min(Math.max(rolledUntil.getTime(), from.getTime()), to.getTime()));
      rows = [
        ...(await this.repository.dailyRows(workspace, from, split)),
        ...(await this.repository.rawRows(workspace, split, to, DAY_MS)),
      ];
    } else {
      rows = await this.repository.rawRows(workspace, from, to, HOUR_MS);
    }
    return buildReport(workspace, by, from, to, rows);
  }
}

function emptyTotals(): UsageTotals {
  return {
    sessions: 0,
    execCalls: 0,
    execSeconds: 0,
    sandboxSeconds: 0,
    cpuSeconds: 0,
    memoryPeakBytes: 0,
    filesIn: 0,
    bytesIn: 0,
    filesOut: 0,
    bytesOut: 0,
    denied: 0,
    hibernations: 0,
    checkpointBytes: 0,
  };
}

/** Adds one aggregate row to totals (quantities are milliseconds or bytes, by kind). */
function addRow(totals: UsageTotals, row: UsageAggregateRow): void {
  switch (row.kind) {
    case "session_created":
      totals.sessions += row.events;
      break;
    case "exec":
      totals.execCalls += row.events;
      totals.execSeconds += row.quantity / 1000;
      break;
    case "session_ended":
      totals.sandboxSeconds += row.quantity / 1000;
      break;
    case "sandbox_cpu":
      totals.cpuSeconds += row.quantity / 1000;
      break;
    case "sandbox_memory_peak":
      totals.memoryPeakBytes = Math.max(totals.memoryPeakBytes, row.quantityMax);
      break;
    case "file_in":
      totals.filesIn += row.events;
      totals.bytesIn += row.quantity;
      break;
    case "file_out":
      totals.filesOut += row.events;
      totals.bytesOut += row.quantity;
      break;
    case "denied":
      totals.denied += row.events;
      break;
    case "checkpoint_saved":
      totals.hibernations += row.events;
      totals.checkpointBytes += row.quantity;
      break;
  }
}

/** Seconds to the millisecond: sums of milliseconds divided by 1000 drift in binary. */
function roundSeconds<T extends Partial<UsageTotals>>(totals: T): T {
  for (const key of ["execSeconds", "sandboxSeconds", "cpuSeconds"] as const)
    if (typeof totals[key] === "number") totals[key] = Math.round(totals[key] * 1000) / 1000;
  return totals;
}

/** Every bucket from `from` to `to`, each with its totals and breakdowns by tool and image. */
export function buildReport(
  workspace: string,
  by: UsageBucketSize,
  from: Date,
  to: Date,
  rows: readonly UsageAggregateRow[],
): UsageReport {
  const size = bucketMsOf[by];
  const buckets = new Map<
    number,
    { totals: UsageTotals; tools: Map<string, UsageTotals>; images: Map<string, UsageTotals> }
  >();
  for (let start = from.getTime(); start < to.getTime(); start += size)
    buckets.set(start, { totals: emptyTotals(), tools: new Map(), images: new Map() });
  const totals = emptyTotals();
  for (const row of rows) {
    const bucket = buckets.get(floorTo(row.start.getTime(), size));
    if (!bucket) continue;
    addRow(bucket.totals, row);
    addRow(totals, row);
    if (row.kind === "exec" && row.tool !== "") {
      const tool = bucket.tools.get(row.tool) ?? emptyTotals();
      addRow(tool, row);
      bucket.tools.set(row.tool, tool);
    }
    if (row.image !== "") {
      const image = bucket.images.get(row.image) ?? emptyTotals();
      addRow(image, row);
      bucket.images.set(row.image, image);
    }
  }
  const sorted = <V>(map: Map<string, V>) => [...map.entries()].sort(([a], [b]) => a.localeCompare(b));
  return {
    workspace,
    by,
    since: from.toISOString(),
    until: to.toISOString(),
    totals: roundSeconds(totals),
    buckets: [...buckets.entries()].map(([start, bucket]) => ({
      start: new Date(start).toISOString(),
      ...roundSeconds(bucket.totals),
      byTool: sorted(bucket.tools).map(([tool, t]) =>
        roundSeconds({ tool, execCalls: t.execCalls, execSeconds: t.execSeconds }),
      ),
      byImage: sorted(bucket.images).map(([image, t]) =>
        roundSeconds({
          image,
          sessions: t.sessions,
          execCalls: t.execCalls,
          execSeconds: t.execSeconds,
          sandboxSeconds: t.sandboxSeconds,
          cpuSeconds: t.cpuSeconds,
        }),
      ),
    })),
  };
}
