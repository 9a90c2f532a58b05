/**
 * helm/sandpool as the real helm (helm-binary.ts) lints and renders it: every
 * ci/*-values.yaml passes `helm lint --strict`, and every object `helm template` renders from
 * it passes the Kubernetes schemas (helm-render.ts). The gateway configuration each one
 * renders passes the gateway's own loader, with the environment the pod gets.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadGatewayConfig } from "../../../src/config/load-config.js";
import { readJson, readYaml } from "./deploy-files.js";
import { CHART_DIR, type KubeObject, lintChart, renderChart, schemaProblems } from "./helm-render.js";

const CI_DIR = path.join(CHART_DIR, "ci");
const ciFiles = readdirSync(CI_DIR)
  .filter((file) => file.endsWith("-values.yaml"))
  .sort();

const dir = mkdtempSync(path.join(tmpdir(), "sandpool-helm-render-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Container = {
  name: string;
  env?: { name: string; value?: string }[];
  securityContext?: { privileged?: boolean };
};
type PodSpec = { containers: Container[]; initContainers?: Container[]; [field: string]: unknown };

function find(objects: readonly KubeObject[], kind: string, name?: string): KubeObject[] {
  return objects.filter(
    (object) => object.kind === kind && (name === undefined || object.metadata.name === name),
  );
}

function podSpec(workload: KubeObject): PodSpec {
  return (workload as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
}

/** The gateway's configuration as its pod reads it: the ConfigMap's file under the pod's environment. */
function gatewayConfigOf(objects: readonly KubeObject[], label: string) {
  const [configMap] = find(objects, "ConfigMap", "sandpool");
  const [secret] = find(objects, "Secret", "sandpool");
  const [deployment] = find(objects, "Deployment", "sandpool");
  const gateway = podSpec(deployment!).containers.find((container) => container.name === "gateway")!;
  const file = path.join(dir, `${label}.yaml`);
  writeFileSync(file, (configMap as unknown as { data: Record<string, string> }).data["sandpool.yaml"]!);
  const env: Record<string, string> = {
    ...(secret as unknown as { stringData: Record<string, string> }).stringData,
    ...Object.fromEntries((gateway.env ?? []).map((variable) => [variable.name, variable.value ?? ""])),
  };
  return loadGatewayConfig({ file, env });
}

const rendered = new Map<string, KubeObject[]>();
beforeAll(async () => {
  // One render per values file (the machine is small), shared by the tests below.
  for (const file of ciFiles) rendered.set(file, await renderChart([path.join(CI_DIR, file)]));
}, 120_000);

describe("helm/sandpool/ci: the shapes the chart supports", () => {
  it("ships the values files of every supported shape", () => {
    expect(ciFiles).toEqual(expect.arrayContaining(["default-values.yaml", "monitoring-values.yaml"]));
  });

  it.each(ciFiles)("%s passes helm lint --strict", async (file) => {
    const output = await lintChart(path.join(CI_DIR, file));
    expect(output).toContain("1 chart(s) linted, 0 chart(s) failed");
  });

  it.each(ciFiles)("%s renders objects that all pass the Kubernetes schemas", (file) => {
    const objects = rendered.get(file)!;
    expect(find(objects, "Deployment")).toHaveLength(1);
    expect(objects.flatMap(schemaProblems)).toEqual([]);
  });

  it.each(ciFiles)("%s renders a gateway configuration the gateway accepts", (file) => {
    const config = gatewayConfigOf(rendered.get(file)!, path.basename(file, ".yaml"));
    expect(config.host).toBe("0.0.0.0");
    for (const image of config.policy.allowedImages)
      expect(config.pools.map((pool) => pool.image)).toContain(image);
  });
});

describe("the schema check itself", () => {
  const deployment = (replicas: unknown): KubeObject => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "x" },
    spec: { replicas, selector: {}, template: { spec: { containers: [{ name: "a" }] } } },
  });

  it("rejects a mistyped field and a kind it has no schema for", () => {
    expect(schemaProblems(deployment(1))).toEqual([]);
    expect(schemaProblems(deployment("two"))).toEqual(["Deployment/x/spec/replicas: must be integer"]);
    expect(schemaProblems({ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } })).toEqual(
      ["Widget/w: no schema for example.com/v1 Widget"],
    );
  });
});

describe("the default shape (Docker-in-Docker sidecar)", () => {
  it("runs the privileged engine beside the gateway, which reaches it over a socket", () => {
    const spec = podSpec(find(rendered.get("default-values.yaml")!, "Deployment")[0]!);
    expect(spec.containers.map((container) => container.name)).toEqual(["dind", "gateway"]);
    expect(spec.containers[0]!.securityContext?.privileged).toBe(true);
    const dockerHost = spec.containers[1]!.env?.find((variable) => variable.name === "DOCKER_HOST")?.value;
    expect(dockerHost).toMatch(/^unix:\/\//);
  });
});

describe("the monitoring shape (Prometheus Operator, Grafana's dashboard sidecar)", () => {
  const objects = () => rendered.get("monitoring-values.yaml")!;

  it("scrapes the gateway's port as the job the rules expect", () => {
    const [monitor] = find(objects(), "ServiceMonitor");
    const spec = (
      monitor as unknown as { spec: { jobLabel: string; endpoints: { port: string; path: string }[] } }
    ).spec;
    expect(spec.endpoints).toMatchObject([{ port: "http", path: "/metrics" }]);
    const [deployment] = find(objects(), "Deployment");
    expect(deployment!.metadata.labels?.[spec.jobLabel]).toBe("sandpool");
    expect(monitor!.metadata.labels).toMatchObject({ release: "kube-prometheus-stack" });
  });

  it("holds the one rules file compose's Prometheus loads, as a PrometheusRule", () => {
    const [rule] = find(objects(), "PrometheusRule");
    expect((rule as unknown as { spec: unknown }).spec).toEqual(
      readYaml("helm/sandpool/files/sandpool-rules.yaml"),
    );
    expect(rule!.metadata.labels).toMatchObject({ release: "kube-prometheus-stack" });
  });

  it("holds the one dashboard file compose's Grafana loads, in a ConfigMap with the sidecar's label", () => {
    const [dashboard] = find(objects(), "ConfigMap", "sandpool-dashboard");
    expect(dashboard!.metadata.labels).toMatchObject({ grafana_dashboard: "1" });
    const data = (dashboard as unknown as { data: Record<string, string> }).data;
    expect(Object.keys(data)).toEqual(["sandpool-dashboard.json"]);
    expect(JSON.parse(data["sandpool-dashboard.json"]!)).toEqual(
      readJson("helm/sandpool/files/sandpool-dashboard.json"),
    );
  });

  it("renders none of them by default", () => {
    const kinds = rendered.get("default-values.yaml")!.map((object) => object.kind);
    expect(kinds).not.toContain("ServiceMonitor");
    expect(kinds).not.toContain("PrometheusRule");
    expect(find(rendered.get("default-values.yaml")!, "ConfigMap", "sandpool-dashboard")).toEqual([]);
  });
});
