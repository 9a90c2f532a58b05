/** Plain-text tables and target verdicts for bench reports. */
import { summarize } from "./stats.mjs";
import { formatMs } from "./timing.mjs";

/**
 * Renders rows (arrays of cells) under `headers` as an aligned text table. Columns whose
 * index is in `alignRight` are right-aligned (default: every column but the first).
 */
export function formatTable(headers, rows, { alignRight } = {}) {
  const cells = [headers, ...rows].map((row) => row.map((cell) => (cell == null ? "" : String(cell))));
  const widths = headers.map((_, col) => Math.max(...cells.map((row) => (row[col] ?? "").length)));
  const right = (col) => (alignRight ? alignRight.includes(col) : col > 0);
  const line = (row) =>
    widths
      .map((width, col) => {
        const cell = row[col] ?? "";
        return right(col) ? cell.padStart(width) : cell.padEnd(width);
      })
      .join("  ")
      .trimEnd();
  const rule = widths.map((width) => "-".repeat(width)).join("  ");
  return [line(cells[0]), rule, ...cells.slice(1).map(line)].join("\n");
}

export function printTable(headers, rows, options) {
  process.stdout.write(`${formatTable(headers, rows, options)}\n`);
}

/** A target "< limit": { label: "< 300 ms", pass, verdict: "PASS" | "FAIL" }. */
export function checkBelow(value, limitMs, formatter = (ms) => `${ms} ms`) {
  const pass = Number.isFinite(value) && value < limitMs;
  return { label: `< ${formatter(limitMs)}`, pass, verdict: pass ? "PASS" : "FAIL" };
}

/** A section heading. */
export function heading(title) {
  process.stdout.write(`\n${title}\n${"=".repeat(title.length)}\n`);
}

/**
 * A latency table with the given statistics as columns (any of summarize()'s fields):
 * its `headers`, and `row(label, samples, target?)` rendering one measure.
 */
export function latencyTable(columns) {
  return {
    headers: ["measure", ...columns, "target", "result"],
    row(label, samples, target) {
      const stats = summarize(samples);
      return [
        label,
        ...columns.map((column) => (column === "n" ? stats.n : formatMs(stats[column]))),
        target ? target.label : "",
        target ? target.verdict : "",
      ];
    },
  };
}

/** A target "<= limit" on any figure: { label, pass, verdict }. */
export function checkAtMost(value, limit, unit = "") {
  const pass = Number.isFinite(value) && value <= limit;
  return { label: `<= ${limit}${unit}`, pass, verdict: pass ? "PASS" : "FAIL" };
}

/** A target ">= limit" on any figure: { label, pass, verdict }. */
export function checkAtLeast(value, limit, unit = "") {
  const pass = Number.isFinite(value) && value >= limit;
  return { label: `>= ${limit}${unit}`, pass, verdict: pass ? "PASS" : "FAIL" };
}
