/**
 * `sandpool usage --workspace W [--since 24h] [--until ...] [--by hour|day] [--json|--csv]`:
 * a workspace's usage report from the admin API (GET /admin/v1/usage): per hour or UTC day,
 * sessions, exec calls and seconds, sandbox-seconds, CPU-seconds where recorded, and the
 * window's breakdown by tool and by image. `--csv` prints one row per bucket and dimension
 * (total, tool, image), for spreadsheets and billing scripts.
 */
import { Command, Option } from "commander";
import {
  type AdminBody,
  AdminUsageError,
  adminCall,
  adminConnection,
  type ConnectionOptions,
} from "../admin/admin-client.js";
import {
  examples,
  runAdmin,
  sinceFlag,
  untilFlag,
  withConnection,
  workspaceArgument,
} from "../admin/admin-command-kit.js";
import { csv, out, printJson, table } from "../admin/admin-render.js";

/** The report as the admin API answers it: the type generated from its OpenAPI document. */
type Report = AdminBody<"get", "/admin/v1/usage">;
type Totals = Report["totals"];

/** A bucket, read leniently: a breakdown may lack columns (an empty cell in the CSV). */
type Bucket = Omit<Report["buckets"][number], "byTool" | "byImage"> & {
  byTool: ({ tool: string } & Partial<Totals>)[];
  byImage: ({ image: string } & Partial<Totals>)[];
};

export type UsageReportAnswer = Omit<Report, "buckets"> & { buckets: Bucket[] };

const CSV_COLUMNS = [
  "sessions",
  "execCalls",
  "execSeconds",
  "sandboxSeconds",
  "cpuSeconds",
  "memoryPeakBytes",
  "filesIn",
  "bytesIn",
  "filesOut",
  "bytesOut",
  "denied",
  "hibernations",
  "checkpointBytes",
] as const;

/** Long format: one row per bucket and dimension; a breakdown leaves columns it lacks empty. */
export function usageCsv(report: UsageReportAnswer): string {
  const rows: unknown[][] = [];
  for (const bucket of report.buckets) {
    rows.push([bucket.start, "total", "", ...CSV_COLUMNS.map((column) => bucket[column])]);
    for (const tool of bucket.byTool)
      rows.push([bucket.start, "tool", tool.tool, ...CSV_COLUMNS.map((c) => tool[c])]);
    for (const image of bucket.byImage)
      rows.push([bucket.start, "image", image.image, ...CSV_COLUMNS.map((c) => image[c])]);
  }
  return `${csv(["start", "dimension", "key", ...CSV_COLUMNS], rows)}\r\n`;
}

const seconds = (value: number | undefined) => (value ? value.toFixed(1) : "0");

/** Sums a breakdown over every bucket of the window. */
function across<K extends "tool" | "image">(report: UsageReportAnswer, dimension: K) {
  const sums = new Map<string, Totals>();
  for (const bucket of report.buckets) {
    const items = (dimension === "tool" ? bucket.byTool : bucket.byImage) as (Partial<Totals> &
      Record<K, string>)[];
    for (const item of items) {
      const sum = sums.get(item[dimension]) ?? ({} as Totals);
      for (const column of CSV_COLUMNS) sum[column] = (sum[column] ?? 0) + (item[column] ?? 0);
      sums.set(item[dimension], sum);
    }
  }
  return [...sums.entries()].sort(([a], [b]) => a.localeCompare(b));
}

export function renderUsage(report: UsageReportAnswer): string {
  const start = (iso: string) =>
    report.by === "day" ? iso.slice(0, 10) : `${iso.slice(0, 13).replace("T", " ")}:00`;
  const parts = [
    `usage of ${report.workspace} from ${report.since} to ${report.until}, by ${report.by} (UTC)`,
    "",
  ];
  parts.push(
    table(
      ["START", "SESSIONS", "EXEC CALLS", "EXEC S", "SANDBOX S", "CPU S"],
      [
        ...report.buckets.map((bucket) => [
          start(bucket.start),
          String(bucket.sessions),
          String(bucket.execCalls),
          seconds(bucket.execSeconds),
          seconds(bucket.sandboxSeconds),
          seconds(bucket.cpuSeconds),
        ]),
        [
          "TOTAL",
          String(report.totals.sessions),
          String(report.totals.execCalls),
          seconds(report.totals.execSeconds),
          seconds(report.totals.sandboxSeconds),
          seconds(report.totals.cpuSeconds),
        ],
      ],
    ),
  );
  const tools = across(report, "tool");
  if (tools.length > 0) {
    parts.push("", "by tool:");
    parts.push(
      table(
        ["TOOL", "EXEC CALLS", "EXEC S"],
        tools.map(([tool, sum]) => [tool, String(sum.execCalls), seconds(sum.execSeconds)]),
      ),
    );
  }
  const images = across(report, "image");
  if (images.length > 0) {
    parts.push("", "by image:");
    parts.push(
      table(
        ["IMAGE", "SESSIONS", "EXEC CALLS", "EXEC S", "SANDBOX S", "CPU S"],
        images.map(([image, sum]) => [
          image,
          String(sum.sessions),
          String(sum.execCalls),
          seconds(sum.execSeconds),
          seconds(sum.sandboxSeconds),
          seconds(sum.cpuSeconds),
        ]),
      ),
    );
  }
  return parts.join("\n");
}

interface UsageOptions extends ConnectionOptions {
  workspace: string;
  since?: string;
  until?: string;
  by: "hour" | "day";
  csv?: boolean;
}

export function usageCommand(): Command {
  return withConnection(
    new Command("usage")
      .summary("a workspace's usage report, per hour or day (table, --json or --csv)")
      .description(
        "A workspace's usage per hour or UTC day from the admin API: sessions, exec calls and seconds, " +
          "sandbox-seconds and CPU-seconds where recorded, broken down by tool and by image. Buckets are " +
          "whole hours or days; daily reports read the daily rollup and reach back past the raw events' " +
          "retention, hourly ones only as far as raw events are kept (retention.usageEventsDays).\n\n" +
          "Exit codes: 0 done, 1 refused by the gateway or unreachable, 2 bad usage.",
      )
      .requiredOption("--workspace <id>", "the workspace", workspaceArgument)
      .addOption(sinceFlag())
      .addOption(untilFlag())
      .addOption(new Option("--by <size>", "bucket size").choices(["hour", "day"]).default("day"))
      .option("--csv", "print CSV: one row per bucket and dimension (total, tool, image)")
      .addHelpText(
        "after",
        examples(
          "sandpool usage --workspace team-a",
          "sandpool usage --workspace team-a --since 7d --by day",
          "sandpool usage --workspace team-a --since 6h --by hour --json",
          "sandpool usage --workspace team-a --since 2026-01-01 --until 2026-02-01 --csv > january.csv",
        ),
      ),
  ).action(
    runAdmin("sandpool usage", async (options: UsageOptions) => {
      if (options.csv && options.json) throw new AdminUsageError("--csv and --json contradict each other");
      const conn = adminConnection(options);
      const query = new URLSearchParams({ workspace: options.workspace, by: options.by });
      if (options.since) query.set("since", options.since);
      if (options.until) query.set("until", options.until);
      const { body } = await adminCall(conn, "get", "/admin/v1/usage", { query: Object.fromEntries(query) });
      if (conn.json) return printJson(body);
      const report = body;
      if (options.csv) return void process.stdout.write(usageCsv(report));
      out(renderUsage(report));
    }),
  );
}
