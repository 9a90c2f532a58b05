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

interface Container {
  name: string;
  command?: string[];
  env?: { name: string; value?: string }[];
  volumeMounts?: { name: string; mountPath: string }[];
  lifecycle?: { postStart?: { exec: { command: string[] } } };
  securityContext?: {
    privileged?: boolean;
    runAsUser?: number;
    capabilities?: { add?: string[]; drop?: string[] };
  };
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: { name: string; hostPath?: { path: string; type?: string }; emptyDir?: unknown }[];
  securityContext?: { supplementalGroups?: number[] };
  nodeSelector?: Record<string, string>;
  tolerations?: { key: string; effect?: string }[];
}

function find(objects: readonly KubeObject[], kind: string, name?: string): KubeObject[] {
  return objects.filter(
    (object) => object.kind === kind && (name === undefined || object.metadata.name === name),
  );
}

interface PolicyRule {
  ports?: { port: number | string; protocol: string }[];
  from?: unknown[];
  to?: unknown[];
}
interface PolicySpec {
  podSelector: { matchLabels: Record<string, string> };
  ingress: PolicyRule[];
  egress: PolicyRule[];
}

const WORKLOADS = new Set(["Deployment", "DaemonSet", "StatefulSet", "Job"]);

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
    expect(ciFiles).toEqual([
      "datascience-values.yaml",
      "default-values.yaml",
      "host-socket-values.yaml",
      "ingress-tls-values.yaml",
      "monitoring-values.yaml",
      "redis-sentinel-values.yaml",
    ]);
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

describe("the Redis Sentinel shape", () => {
  const objects = () => rendered.get("redis-sentinel-values.yaml")!;

  it("keeps both passwords in the Secret, none in the ConfigMap, and sets no REDIS_URL", () => {
    const [secret] = find(objects(), "Secret", "sandpool");
    const data = (secret as unknown as { stringData: Record<string, string> }).stringData;
    expect(data).toMatchObject({
      SANDPOOL_REDIS_PASSWORD: "redis-secret",
      SANDPOOL_REDIS_SENTINEL_PASSWORD: "sentinel-secret",
    });
    expect(data).not.toHaveProperty("REDIS_URL");
    const [configMap] = find(objects(), "ConfigMap", "sandpool");
    const file = (configMap as unknown as { data: Record<string, string> }).data["sandpool.yaml"]!;
    expect(file).not.toContain("secret");
  });

  it("gives the gateway the Sentinels, the master's name and both passwords", () => {
    const config = gatewayConfigOf(objects(), "redis-sentinel");
    expect(config.redis).toMatchObject({
      sentinels: expect.arrayContaining(["redis-sentinel-0.redis-sentinel.data.svc:26379"]),
      sentinelName: "sandpool",
      password: "redis-secret",
      sentinelPassword: "sentinel-secret",
    });
    expect(config.redisUrl).toBeUndefined();
  });
});

describe("upgrades", () => {
  it.each(ciFiles)("%s replaces the pod rather than run a second one beside it on another engine", (file) => {
    const [deployment] = find(rendered.get(file)!, "Deployment");
    expect((deployment as unknown as { spec: { strategy?: { type: string } } }).spec.strategy).toEqual({
      type: "Recreate",
    });
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

describe("the host-socket shape (the node's Docker engine on labelled nodes)", () => {
  const objects = () => rendered.get("host-socket-values.yaml")!;
  const spec = () => podSpec(find(objects(), "Deployment")[0]!);

  it("runs no privileged container, in any workload", () => {
    const containers = objects()
      .filter((object) => WORKLOADS.has(object.kind))
      .flatMap((workload) => [...(podSpec(workload).initContainers ?? []), ...podSpec(workload).containers]);
    expect(containers.length).toBeGreaterThan(2);
    expect(containers.filter((container) => container.securityContext?.privileged)).toEqual([]);
    expect(spec().containers.map((container) => container.name)).toEqual(["gateway"]);
  });

  it("mounts the node's socket and /run/sandpool, the same path the host engine sees", () => {
    const volumes = new Map((spec().volumes ?? []).map((volume) => [volume.name, volume]));
    const gateway = spec().containers[0]!;
    const mounts = new Map((gateway.volumeMounts ?? []).map((mount) => [mount.name, mount.mountPath]));
    expect(volumes.get("docker-socket")?.hostPath).toEqual({ path: "/var/run/docker.sock", type: "Socket" });
    const dockerHost = gateway.env?.find((variable) => variable.name === "DOCKER_HOST")?.value;
    expect(dockerHost).toBe(`unix://${mounts.get("docker-socket")}`);
    expect(volumes.get("sandbox-sockets")?.hostPath?.path).toBe("/run/sandpool");
    expect(mounts.get("sandbox-sockets")).toBe("/run/sandpool");
  });

  it("gives the socket directory to the gateway's user with CHOWN and FOWNER only, and joins the socket's group", () => {
    const [init] = spec().initContainers ?? [];
    expect(init?.securityContext).toMatchObject({
      runAsUser: 0,
      capabilities: { drop: ["ALL"], add: ["CHOWN", "FOWNER"] },
    });
    expect(init?.command?.join(" ")).toContain("chown 10000:10000 /run/sandpool && chmod 0700 /run/sandpool");
    expect(init?.volumeMounts).toEqual([{ name: "sandbox-sockets", mountPath: "/run/sandpool" }]);
    expect(spec().securityContext?.supplementalGroups).toEqual([999]);
  });

  it("runs only on the labelled, tainted sandbox nodes", () => {
    expect(spec().nodeSelector).toEqual({ "sandpool/sandbox-node": "true" });
    expect(spec().tolerations).toMatchObject([{ key: "sandpool/sandbox-node", effect: "NoSchedule" }]);
  });
});

describe("the ingress-tls shape (an Ingress with TLS and a NetworkPolicy)", () => {
  const objects = () => rendered.get("ingress-tls-values.yaml")!;
  type IngressSpec = {
    ingressClassName: string;
    tls: { secretName: string; hosts: string[] }[];
    rules: {
      host: string;
      http: { paths: { backend: { service: { name: string; port: { name: string } } } }[] };
    }[];
  };

  it("routes its host to the Service's port, with TLS, and the gateway answers that Host", () => {
    const ingress = (find(objects(), "Ingress")[0] as unknown as { spec: IngressSpec }).spec;
    const [service] = find(objects(), "Service");
    const ports = (service as unknown as { spec: { ports: { name: string }[] } }).spec.ports.map(
      (port) => port.name,
    );
    expect(ingress.rules.map((rule) => rule.host)).toEqual(["sandpool.example.com"]);
    for (const path of ingress.rules[0]!.http.paths) {
      expect(path.backend.service.name).toBe(service!.metadata.name);
      expect(ports).toContain(path.backend.service.port.name);
    }
    expect(ingress.tls).toEqual([{ secretName: "sandpool-tls", hosts: ["sandpool.example.com"] }]);
    const config = gatewayConfigOf(objects(), "ingress-allowed-hosts");
    expect(config.http.allowedHosts).toEqual(expect.arrayContaining(["sandpool", "sandpool.example.com"]));
  });

  it("lets only the ingress controller and Prometheus reach the gateway's port", () => {
    const policy = (find(objects(), "NetworkPolicy")[0] as unknown as { spec: PolicySpec }).spec;
    const [deployment] = find(objects(), "Deployment");
    const selector = (deployment as unknown as { spec: { selector: { matchLabels: unknown } } }).spec
      .selector;
    expect(policy.podSelector.matchLabels).toEqual(selector.matchLabels);
    expect(policy.ingress).toEqual([
      {
        ports: [{ port: "http", protocol: "TCP" }],
        from: [
          { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "ingress-nginx" } } },
          { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } },
        ],
      },
    ]);
  });

  it("lets the pod reach DNS, Redis, Postgres, the sidecar's registry and the JWKS, nothing else", () => {
    const policy = (find(objects(), "NetworkPolicy")[0] as unknown as { spec: PolicySpec }).spec;
    const ports = policy.egress.map((rule) =>
      (rule.ports ?? []).map((port) => `${port.port}/${port.protocol}`),
    );
    expect(ports).toEqual([["53/UDP", "53/TCP"], ["6379/TCP"], ["5432/TCP"], ["443/TCP"], ["443/TCP"]]);
    // Every rule names its destinations but the registry's (any address: registries move).
    expect(policy.egress.map((rule) => rule.to !== undefined)).toEqual([true, true, true, false, true]);
  });

  it("renders neither by default", () => {
    const kinds = rendered.get("default-values.yaml")!.map((object) => object.kind);
    expect(kinds).not.toContain("Ingress");
    expect(kinds).not.toContain("NetworkPolicy");
  });

  it("with the policy's own defaults, lets anyone reach the port and the pod reach its services", async () => {
    const objects = await renderChart(
      [path.join(CI_DIR, "default-values.yaml")],
      ["networkPolicy.enabled=true"],
    );
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    const policy = (find(objects, "NetworkPolicy")[0] as unknown as { spec: PolicySpec }).spec;
    // No `from`: any peer, on the gateway's port only.
    expect(policy.ingress).toEqual([{ ports: [{ port: "http", protocol: "TCP" }] }]);
    const ports = policy.egress.map((rule) =>
      (rule.ports ?? []).map((port) => `${port.port}/${port.protocol}`),
    );
    expect(ports).toEqual([["53/UDP", "53/TCP"], ["6379/TCP"], ["5432/TCP"], ["443/TCP"]]);
  });
});

describe("the PodDisruptionBudget", () => {
  it.each(ciFiles)(
    "%s: covers the gateway's pods only and never blocks a node drain of one replica",
    (file) => {
      const objects = rendered.get(file)!;
      const [budget] = find(objects, "PodDisruptionBudget");
      const spec = (budget as unknown as { spec: { maxUnavailable: number; selector: unknown } }).spec;
      const [deployment] = find(objects, "Deployment");
      expect(spec.selector).toEqual((deployment as unknown as { spec: { selector: unknown } }).spec.selector);
      expect(spec.maxUnavailable).toBeGreaterThanOrEqual(1);
      // The hook Jobs' pods are not gateways to it.
      for (const job of find(objects, "Job")) {
        const labels = (
          job as unknown as { spec: { template: { metadata: { labels: Record<string, string> } } } }
        ).spec.template.metadata.labels;
        const selector = (spec.selector as { matchLabels: Record<string, string> }).matchLabels;
        expect(Object.entries(selector).every(([key, value]) => labels[key] === value)).toBe(false);
      }
    },
  );
});

describe("the datascience shape (a second pool of the data-science image)", () => {
  it("pools both images, allows both, and the sidecar pulls both", () => {
    const objects = rendered.get("datascience-values.yaml")!;
    const config = gatewayConfigOf(objects, "datascience");
    expect(config.pools.map((pool) => [pool.name, pool.image])).toEqual([
      ["default", "sandpool/sandbox:dev"],
      ["datascience", "sandpool/sandbox-datascience:dev"],
    ]);
    expect(config.policy.allowedImages).toEqual(["sandpool/sandbox:dev", "sandpool/sandbox-datascience:dev"]);
    expect(config.policy.defaultImage).toBe("sandpool/sandbox:dev");
    const dind = podSpec(find(objects, "Deployment")[0]!).containers.find(
      (container) => container.name === "dind",
    )!;
    const script = dind.lifecycle?.postStart?.exec.command.join(" ") ?? "";
    for (const image of config.policy.allowedImages) expect(script).toContain(`pull "${image}"`);
  });
});
