/** How `sandpool verify` prints its results: a table for people, JSON for programs. */
import type { ProbeResult } from "./probe.js";

export function reportJson(results: readonly ProbeResult[]): string {
  return JSON.stringify({ probes: results }, null, 2);
}

/** One probe a line: outcome, name, evidence; then a count. */
export function reportTable(results: readonly ProbeResult[]): string {
  const width = Math.max(...results.map((r) => r.name.length), "PROBE".length);
  const lines = [
    `${"RESULT".padEnd(6)}  ${"PROBE".padEnd(width)}  EVIDENCE`,
    ...results.map(
      (r) => `${(r.outcome === "pass" ? "pass" : "FAIL").padEnd(6)}  ${r.name.padEnd(width)}  ${r.evidence}`,
    ),
  ];
  const failed = results.filter((r) => r.outcome === "fail");
  lines.push(
    "",
    failed.length === 0
      ? `all ${results.length} probes passed`
      : `${failed.length} of ${results.length} probes failed: ${failed.map((r) => r.name).join(", ")}`,
  );
  return lines.join("\n");
}
