import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { readJson, readYaml, repoPath } from "./deploy-files.js";
import {
  checkExpression,
  gatewayMetricNames,
  gatewaySeries,
  groupingLabelsIn,
  selectorsIn,
} from "./promql.js";

interface Target {
  expr?: string;
  refId?: string;
}
interface Panel {
  type: string;
  title?: string;
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  panels?: Panel[];
}
interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: unknown; definition?: string }[] };
}
interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleFile {
  groups: { name: string; rules: Rule[] }[];
}

const DASHBOARD = "helm/sandpool/files/sandpool-dashboard.json";
/** Every panel's data source: the dashboard's own variable, so it imports anywhere. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a template
const DATASOURCE = { type: "prometheus", uid: "${datasource}" };
const RULES = "helm/sandpool/files/sandpool-rules.yaml";

const dashboard = readJson<Dashboard>(DASHBOARD);
const rules = readYaml<RuleFile>(RULES);
const allRules = rules.groups.flatMap((group) => group.rules);
const exported = gatewaySeries();

/** The gateway's series plus the rule file's recorded ones (labels: what they group by). */
const known = new Map<string, ReadonlySet<string>>(exported);
for (const rule of allRules)
  if (rule.record) known.set(rule.record, new Set(groupingLabelsIn(rule.expr).filter((l) => l !== "le")));

function panelsOf(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((panel) => [panel, ...panelsOf(panel.panels ?? [])]);
}
const panels = panelsOf(dashboard.panels);
const queries = panels.flatMap((panel) =>
  (panel.targets ?? []).map((target) => ({
    where: `${panel.title} ${target.refId}`,
    expr: target.expr ?? "",
  })),
);

function problemsOf(expressions: readonly { where: string; expr: string }[]) {
  return expressions
    .map(({ where, expr }) => ({ where, ...checkExpression(expr, known) }))
    .filter((found) => found.unknownSeries.length > 0 || found.unknownLabels.length > 0);
}

describe("the PromQL reader these tests rely on", () => {
  it("finds series and their matcher labels, not functions, keywords or strings", () => {
    expect(
      selectorsIn(
        'histogram_quantile(0.99, sum by (pool, le) (rate(a_bucket{pool=~"$pool", x!="y z"}[$__rate_interval]))) > 1e3 and on (job) b offset 5m',
      ),
    ).toEqual([
      { name: "a_bucket", labels: ["pool", "x"] },
      { name: "b", labels: [] },
    ]);
    expect(groupingLabelsIn("sum by (pool, le) (x) / ignoring(le) y")).toEqual(["pool", "le", "le"]);
  });

  it("knows the gateway's series, with histogram suffixes and the process metrics' prefix", () => {
    expect(exported.get("sandpool_lease_duration_seconds_bucket")).toEqual(
      new Set(["pool", "start", "le", "job", "instance"]),
    );
    expect(exported.has("sandpool_lease_duration_seconds")).toBe(false);
    expect(exported.has("sandpool_process_cpu_seconds_total")).toBe(true);
    expect(checkExpression('sum(rate(sandpool_http_requests_totl{status="500"}[5m]))', known)).toEqual({
      unknownSeries: ["sandpool_http_requests_totl"],
      unknownLabels: [],
    });
    expect(checkExpression("sum by (tool) (sandpool_rejections_total)", known).unknownLabels).toEqual([
      "by/on (tool)",
    ]);
  });
});

describe("the Grafana dashboard", () => {
  it("is a dashboard with panels that query Prometheus through its data source variable", () => {
    expect(dashboard.uid).toMatch(/^[\w-]{1,40}$/);
    expect(queries.length).toBeGreaterThan(10);
    const variables = dashboard.templating.list.map((variable) => variable.name);
    expect(variables).toContain("datasource");
    for (const panel of panels.filter((p) => p.type !== "row"))
      expect(panel.datasource, panel.title).toEqual(DATASOURCE);
    for (const { where, expr } of queries) expect(expr.trim(), where).not.toBe("");
  });

  it("queries only series and labels the gateway exports", () => {
    expect(problemsOf(queries)).toEqual([]);
  });

  it("fills its variables from series the gateway exports", () => {
    for (const variable of dashboard.templating.list.filter((v) => v.type === "query")) {
      const match = /label_values\(\s*([\w:]+)\s*,\s*(\w+)\s*\)/.exec(variable.definition ?? "");
      expect(match, variable.name).not.toBeNull();
      expect(known.get(match![1]!)?.has(match![2]!), `${variable.name}: ${match![0]}`).toBe(true);
    }
  });

  it("charts every metric the gateway defines", () => {
    const used = queries.flatMap(({ expr }) => selectorsIn(expr).map((s) => s.name));
    const uncharted = gatewayMetricNames().filter(
      (name) =>
        !used.some((series) => series === name || series.replace(/_(bucket|sum|count)$/, "") === name),
    );
    expect(uncharted).toEqual([]);
  });
});

describe("the Prometheus rules", () => {
  it("are recording rules and alerts, each alert with a duration, a severity and a summary", () => {
    expect(allRules.length).toBeGreaterThan(0);
    for (const rule of allRules) {
      expect(Boolean(rule.record) !== Boolean(rule.alert), JSON.stringify(rule)).toBe(true);
      expect(rule.expr.trim()).not.toBe("");
      if (rule.record) expect(rule.record).toMatch(/^sandpool:[\w:]+$/);
      if (rule.alert) {
        expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
        expect(["critical", "warning", "info"], rule.alert).toContain(rule.labels?.severity);
        expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      }
    }
  });

  it("use only series and labels the gateway exports, or that the file records", () => {
    expect(
      problemsOf(allRules.map((rule) => ({ where: rule.record ?? rule.alert!, expr: rule.expr }))),
    ).toEqual([]);
  });

  it("cover the gateway's failure modes", () => {
    const alerts = allRules.filter((rule) => rule.alert).map((rule) => `${rule.alert}: ${rule.expr}`);
    for (const needed of [
      /up\{job="sandpool"\} == 0/,
      /http_5xx/,
      /pool_idle_sandboxes.* == 0/,
      /warmup_failures/,
      /lease_duration_seconds/,
      // The roles: node loss, too few ready nodes, routing errors.
      /nodes_lost/,
      /nodes:max\{state="ready"\}/,
      /nodes_registered/,
      /routing_errors/,
    ])
      expect(
        alerts.some((alert) => needed.test(alert)),
        String(needed),
      ).toBe(true);
  });
});

describe("the compose monitoring profile's Prometheus and Grafana", () => {
  interface PrometheusConfig {
    rule_files: string[];
    scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[] }[] }[];
  }
  const prometheus = readYaml<PrometheusConfig>("deploy/prometheus/prometheus.yml");

  it("scrape the gateway as job sandpool, the job the rules and the dashboard select", () => {
    const jobs = prometheus.scrape_configs.map((config) => config.job_name);
    expect(jobs).toContain("sandpool");
    const jobSelectors = [...queries.map((q) => q.expr), ...allRules.map((r) => r.expr)].flatMap((expr) =>
      [...expr.matchAll(/job="([^"]+)"/g)].map((match) => match[1]),
    );
    expect(new Set(jobSelectors)).toEqual(new Set(["sandpool"]));
    const sandpool = prometheus.scrape_configs.find((config) => config.job_name === "sandpool")!;
    expect(sandpool.metrics_path ?? "/metrics").toBe("/metrics");
  });

  it("provision a Prometheus data source and the dashboard's folder", () => {
    const datasources = readYaml<{ datasources: { type: string; url: string }[] }>(
      "deploy/grafana/provisioning/datasources/prometheus.yaml",
    );
    expect(datasources.datasources.map((d) => d.type)).toEqual(["prometheus"]);
    const providers = readYaml<{ providers: { type: string; options: { path: string } }[] }>(
      "deploy/grafana/provisioning/dashboards/sandpool.yaml",
    );
    expect(providers.providers.map((p) => p.type)).toEqual(["file"]);
    expect(existsSync(repoPath(DASHBOARD))).toBe(true);
  });
});
