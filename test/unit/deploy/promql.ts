/**
 * Just enough PromQL reading to check a dashboard or a rule file against what the gateway
 * exports: the series an expression selects (with the labels its matchers name) and the labels
 * it groups by. Not a parser: strings, ranges and grouping clauses are blanked out, and every
 * remaining identifier that is not a keyword or a call is a series name.
 */
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import { ROLE_SERIES } from "./roles-interface.js";

export interface SeriesSelector {
  name: string;
  /** Label names in its `{...}` matchers. */
  labels: string[];
}

const KEYWORDS = new Set([
  "and",
  "or",
  "unless",
  "bool",
  "offset",
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "inf",
  "nan",
]);
const GROUPING = /\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;

/** Grafana's `$var` and `${var}`, and PromQL strings and ranges, which hold no series names. */
function blankOut(expr: string): string {
  return expr
    .replace(/\$\{[^}]*\}|\$\w+/g, "0")
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\[[^\]]*\]/g, "");
}

export function selectorsIn(expr: string): SeriesSelector[] {
  const text = blankOut(expr).replace(GROUPING, " ");
  const selectors: SeriesSelector[] = [];
  for (const match of text.matchAll(/(?<![\w:.])([A-Za-z_:][\w:]*)\s*(\{[^}]*\})?/g)) {
    const name = match[1]!;
    const matchers = match[2];
    const rest = text.slice(match.index + match[0].length).trimStart();
    if (KEYWORDS.has(name) || (matchers === undefined && rest.startsWith("("))) continue;
    const labels = matchers
      ? [...matchers.matchAll(/([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((label) => label[1]!)
      : [];
    selectors.push({ name, labels });
  }
  return selectors;
}

/** Labels named in `by (...)`, `without (...)`, `on (...)` and the like. */
export function groupingLabelsIn(expr: string): string[] {
  return [...blankOut(expr).matchAll(GROUPING)].flatMap((match) =>
    match[1]!
      .split(",")
      .map((label) => label.trim())
      .filter((label) => label.length > 0),
  );
}

/** Labels Prometheus adds to every scraped series. */
const TARGET_LABELS = ["job", "instance"];

/**
 * Every series name the gateway's /metrics exposes (histogram _bucket/_sum/_count included)
 * with its label names, plus Prometheus's own `up`. Built from the real registry, so a metric
 * renamed in src/metering/gateway-metrics.ts fails the tests of every file that uses it.
 */
export function gatewaySeries(): Map<string, Set<string>> {
  const metrics = new GatewayMetrics();
  const series = new Map<string, Set<string>>([["up", new Set(TARGET_LABELS)]]);
  try {
    for (const metric of metrics.registry.getMetricsAsArray()) {
      const labels = [
        ...((metric as unknown as { labelNames?: readonly string[] }).labelNames ?? []),
        ...TARGET_LABELS,
      ];
      const type = String(metric.type);
      if (type === "histogram") {
        series.set(`${metric.name}_bucket`, new Set([...labels, "le"]));
        series.set(`${metric.name}_sum`, new Set(labels));
        series.set(`${metric.name}_count`, new Set(labels));
      } else if (type === "summary") {
        series.set(metric.name, new Set([...labels, "quantile"]));
        series.set(`${metric.name}_sum`, new Set(labels));
        series.set(`${metric.name}_count`, new Set(labels));
      } else {
        series.set(metric.name, new Set(labels));
      }
    }
  } finally {
    metrics.registry.clear();
  }
  // The edge and node series of the roles' interface, where src/ does not register them (yet).
  for (const [name, labels] of ROLE_SERIES)
    if (!series.has(name)) series.set(name, new Set([...labels, ...TARGET_LABELS]));
  return series;
}

/** The gateway's own metric names (process metrics aside), as registered, and the roles' ones. */
export function gatewayMetricNames(): string[] {
  const metrics = new GatewayMetrics({ processMetrics: false });
  try {
    const names = metrics.registry.getMetricsAsArray().map((metric) => metric.name);
    return [...new Set([...names, ...ROLE_SERIES.keys()])];
  } finally {
    metrics.registry.clear();
  }
}

export interface ExpressionProblems {
  unknownSeries: string[];
  unknownLabels: string[];
}

/**
 * What in `expr` the gateway does not export: series names unknown to `known`, and labels
 * that no selected series carries (in matchers, or in grouping clauses).
 */
export function checkExpression(expr: string, known: ReadonlyMap<string, ReadonlySet<string>>) {
  const problems: ExpressionProblems = { unknownSeries: [], unknownLabels: [] };
  const selectors = selectorsIn(expr);
  const everyLabel = new Set<string>();
  for (const selector of selectors) {
    const labels = known.get(selector.name);
    if (!labels) {
      problems.unknownSeries.push(selector.name);
      continue;
    }
    for (const label of labels) everyLabel.add(label);
    for (const label of selector.labels)
      if (!labels.has(label)) problems.unknownLabels.push(`${selector.name}{${label}}`);
  }
  for (const label of groupingLabelsIn(expr))
    if (!everyLabel.has(label)) problems.unknownLabels.push(`by/on (${label})`);
  return problems;
}
