/**
 * Usage as CSV for the download on a workspace's usage tab: one row per bucket (UTC day), the
 * figures the charts draw and the rest of the report's. Quoted where a value needs it.
 */
import type { UsageReport } from "./api.js";

const COLUMNS = [
  "start",
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

function cell(value: string | number): string {
  const text = String(value);
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function usageCsv(report: UsageReport): string {
  const lines = [["workspace", ...COLUMNS].join(",")];
  for (const bucket of report.buckets)
    lines.push([report.workspace, ...COLUMNS.map((column) => bucket[column])].map(cell).join(","));
  return `${lines.join("\r\n")}\r\n`;
}
