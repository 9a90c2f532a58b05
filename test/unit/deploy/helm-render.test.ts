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
import { z } from "zod";
import { missingForServe } from "../../../src/cli/run-serve.js";
import { refusedForServe } from "../../../src/cli/serve-refusals.js";
import { configEnvVariables } from "../../../src/config/config-env.js";
import { gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import { loadGatewayConfig } from "../../../src/config/load-config.js";
import { readJson, readYaml } from "./deploy-files.js";
import { CHART_DIR, type KubeObject, lintChart, renderChart, schemaProblems } from "./helm-render.js";
import { NODE_PORT, ROLE_ENV_VARIABLES } from "./roles-interface.js";

const CI_DIR = path.join(CHART_DIR, "ci");
const ciFiles = readdirSync(CI_DIR)
  .filter((file) => file.endsWith("-values.yaml"))
  .sort();

const dir = mkdtempSync(path.join(tmpdir(), "sandpool-helm-render-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}
interface Probe {
  httpGet: { path: string; port: string | number };
}
interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  envFrom?: { secretRef?: { name: string } }[];
  ports?: { name: string; containerPort: number; protocol: string }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  volumeMounts?: { name: string; mountPath: string; mountPropagation?: string }[];
  lifecycle?: { postStart?: { exec: { command: string[] } } };
  securityContext?: {
    privileged?: boolean;
    runAsUser?: number;
    runAsNonRoot?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { add?: string[]; drop?: string[] };
  };
}
interface Volume {
  name: string;
  hostPath?: { path: string; type?: string };
  emptyDir?: unknown;
  persistentVolumeClaim?: { claimName: string };
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
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

type Labels = Record<string, string>;

/** The labels of a workload's pods. */
function podLabels(workload: KubeObject): Labels {
  return (workload as unknown as { spec: { template: { metadata: { labels: Labels } } } }).spec.template
    .metadata.labels;
}

/** Whether a matchLabels selector selects pods with these labels. */
function selects(selector: Labels, labels: Labels): boolean {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

const WORKLOADS = new Set(["Deployment", "DaemonSet", "StatefulSet", "Job"]);

function podSpec(workload: KubeObject): PodSpec {
  return (workload as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
}

/** What the kubelet gives a pod's downward-API fields in these tests. */
const POD_FIELDS: Record<string, string> = { "status.podIP": "10.1.2.3", "spec.nodeName": "sandbox-node-1" };

/** A container's environment as the kubelet builds it: downward-API fields, then $(VAR) references. */
function containerEnv(container: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    const field = variable.valueFrom?.fieldRef?.fieldPath;
    const value = field === undefined ? (variable.value ?? "") : POD_FIELDS[field]!;
    env[variable.name] = value.replace(/\$\((\w+)\)/g, (whole, name: string) => env[name] ?? whole);
  }
  return env;
}

/** The workload `kind/name` of a render, and its container `container`. */
function containerOf(objects: readonly KubeObject[], kind: string, name: string, container: string) {
  const [workload] = find(objects, kind, name);
  expect(workload, `${kind}/${name}`).toBeDefined();
  const found = podSpec(workload!).containers.find((candidate) => candidate.name === container);
  expect(found, `${kind}/${name} container ${container}`).toBeDefined();
  return found!;
}

/** The names of the Secrets a container reads its environment from (envFrom). */
function secretRefsOf(container: Container): string[] {
  return (container.envFrom ?? []).flatMap((source) => (source.secretRef ? [source.secretRef.name] : []));
}

/** The pod's environment: the variables of the Secrets it reads, under the container's own. */
function podEnv(objects: readonly KubeObject[], container: Container): Record<string, string> {
  const fromSecrets = secretRefsOf(container).map((name) => {
    const [secret] = find(objects, "Secret", name);
    expect(secret, `Secret ${name}`).toBeDefined();
    return (secret as unknown as { stringData: Record<string, string> }).stringData;
  });
  return Object.assign({}, ...fromSecrets, containerEnv(container));
}

/**
 * The gateway's configuration as a pod reads it: the ConfigMap's file under the pod's
 * environment. By default the single gateway's; with roles, an edge's or a node's container.
 */
function gatewayConfigOf(
  objects: readonly KubeObject[],
  label: string,
  workload: { kind: string; name: string; container: string } = {
    kind: "Deployment",
    name: "sandpool",
    container: "gateway",
  },
) {
  const [configMap] = find(objects, "ConfigMap", "sandpool");
  const container = containerOf(objects, workload.kind, workload.name, workload.container);
  const file = path.join(dir, `${label}.yaml`);
  writeFileSync(file, (configMap as unknown as { data: Record<string, string> }).data["sandpool.yaml"]!);
  const env = podEnv(objects, container);
  // Before the roles are merged the loader refuses their variables as unknown: the pods'
  // env is asserted by the tests of the roles shape instead.
  if (!schemaKnowsRoles) for (const name of ROLE_ENV_VARIABLES) delete env[name];
  return loadGatewayConfig({ file, env });
}

const EDGE = { kind: "Deployment", name: "sandpool-edge", container: "edge" };
const NODE = { kind: "DaemonSet", name: "sandpool-node", container: "node" };

/** Whether the gateway's configuration knows the roles' keys and variables (once the roles are merged). */
const schemaKnowsRoles = (() => {
  const generated = z.toJSONSchema(gatewayConfigSchema, { io: "input" }) as {
    properties?: Record<string, unknown>;
  };
  const variables = new Set(configEnvVariables.map((variable) => variable.name));
  return (
    "role" in (generated.properties ?? {}) &&
    "node" in (generated.properties ?? {}) &&
    ROLE_ENV_VARIABLES.every((name) => variables.has(name))
  );
})();

/** Values files of the roles shape (edges and nodes) and of the single gateway. */
const isRoles = (file: string) => file.startsWith("multinode");

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
      "multinode-dind-values.yaml",
      "multinode-values.yaml",
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
    const workloads = isRoles(file) ? [EDGE, NODE] : [undefined];
    for (const workload of workloads) {
      const label = `${path.basename(file, ".yaml")}-${workload?.container ?? "gateway"}`;
      const config = gatewayConfigOf(rendered.get(file)!, label, workload);
      expect(config.host).toBe("0.0.0.0");
      for (const image of config.policy.allowedImages)
        expect(config.pools.map((pool) => pool.image)).toContain(image);
    }
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
  it.each(ciFiles.filter((file) => !isRoles(file)))(
    "%s replaces the pod rather than run a second one beside it on another engine",
    (file) => {
      const [deployment] = find(rendered.get(file)!, "Deployment");
      expect((deployment as unknown as { spec: { strategy?: { type: string } } }).spec.strategy).toEqual({
        type: "Recreate",
      });
    },
  );
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
    "%s: one per workload, covering its pods only, never blocking a node drain of one replica",
    (file) => {
      const objects = rendered.get(file)!;
      const budgets = find(objects, "PodDisruptionBudget").map(
        (budget) =>
          (budget as unknown as { spec: { maxUnavailable: number; selector: { matchLabels: Labels } } }).spec,
      );
      const workloads = [...find(objects, "Deployment"), ...find(objects, "DaemonSet")];
      expect(budgets).toHaveLength(workloads.length);
      for (const workload of workloads) {
        const covering = budgets.filter((budget) =>
          selects(budget.selector.matchLabels, podLabels(workload)),
        );
        expect(covering, workload.metadata.name).toHaveLength(1);
        expect(covering[0]!.selector).toEqual(
          (workload as unknown as { spec: { selector: unknown } }).spec.selector,
        );
        expect(covering[0]!.maxUnavailable).toBeGreaterThanOrEqual(1);
      }
      // The hook Jobs' pods are not gateways to any.
      for (const job of find(objects, "Job"))
        for (const budget of budgets)
          expect(selects(budget.selector.matchLabels, podLabels(job))).toBe(false);
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

describe("the multinode shapes (roles: edges and a node DaemonSet)", () => {
  const roleFiles = ciFiles.filter(isRoles);
  const host = () => rendered.get("multinode-values.yaml")!;
  const dind = () => rendered.get("multinode-dind-values.yaml")!;
  const containersOf = (objects: readonly KubeObject[]) =>
    objects
      .filter((object) => WORKLOADS.has(object.kind))
      .flatMap((workload) =>
        [...(podSpec(workload).initContainers ?? []), ...podSpec(workload).containers].map((container) => ({
          workload: `${workload.kind}/${workload.metadata.name}`,
          container,
        })),
      );

  it("mounts the egress CA's Secret read-only into the nodes only, as the files the gateway reads", async () => {
    const objects = await renderChart(
      [path.join(CI_DIR, "multinode-values.yaml")],
      ["egressCa.existingSecret=sandpool-egress-ca"],
    );
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    const node = containerOf(objects, NODE.kind, NODE.name, NODE.container) as Container & {
      volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
    };
    expect(node.volumeMounts).toContainEqual({
      name: "egress-ca",
      mountPath: "/etc/sandpool-egress-ca",
      readOnly: true,
    });
    expect(node.env).toEqual(
      expect.arrayContaining([
        { name: "SANDPOOL_EGRESS_CA_CERT_FILE", value: "/etc/sandpool-egress-ca/tls.crt" },
        { name: "SANDPOOL_EGRESS_CA_KEY_FILE", value: "/etc/sandpool-egress-ca/tls.key" },
      ]),
    );
    expect(secretsReferencedBy(find(objects, "DaemonSet", "sandpool-node")[0]!)).toContain(
      "sandpool-egress-ca",
    );
    expect(JSON.stringify(find(objects, "Deployment", "sandpool-edge"))).not.toContain("egress-ca");
    expect(JSON.stringify(host())).not.toContain("egress-ca");
  });

  it("ships both: the host socket without a privileged container, DinD with a privileged sidecar", () => {
    expect(roleFiles).toEqual(["multinode-dind-values.yaml", "multinode-values.yaml"]);
    const hostContainers = containersOf(host());
    expect(hostContainers.length).toBeGreaterThan(3);
    expect(hostContainers.filter(({ container }) => container.securityContext?.privileged)).toEqual([]);
    const privileged = containersOf(dind())
      .filter(({ container }) => container.securityContext?.privileged)
      .map(({ workload, container }) => `${workload} ${container.name}`);
    expect(privileged).toEqual(["DaemonSet/sandpool-node dind"]);
  });

  it.each(roleFiles)(
    "%s renders the node DaemonSet, the edge Deployment and its autoscaler, no single gateway",
    (file) => {
      const objects = rendered.get(file)!;
      const names = (kind: string) => find(objects, kind).map((object) => object.metadata.name);
      expect(names("DaemonSet")).toEqual(["sandpool-node"]);
      expect(names("Deployment")).toEqual(["sandpool-edge"]);
      expect(names("HorizontalPodAutoscaler")).toEqual(["sandpool-edge"]);
    },
  );

  it.each(roleFiles)(
    "%s sets the edges' replicas explicitly, 2 or more, and autoscales that Deployment on CPU",
    (file) => {
      const objects = rendered.get(file)!;
      const [edge] = find(objects, "Deployment", "sandpool-edge");
      const replicas = (edge as unknown as { spec: { replicas?: number } }).spec.replicas;
      expect(replicas).toBeGreaterThanOrEqual(2);
      const [hpa] = find(objects, "HorizontalPodAutoscaler");
      expect(hpa!.apiVersion).toBe("autoscaling/v2");
      const spec = (
        hpa as unknown as {
          spec: {
            scaleTargetRef: unknown;
            minReplicas: number;
            maxReplicas: number;
            metrics: { type: string; resource: { name: string; target: { type: string } } }[];
          };
        }
      ).spec;
      expect(spec.scaleTargetRef).toEqual({
        apiVersion: "apps/v1",
        kind: "Deployment",
        name: "sandpool-edge",
      });
      expect(spec.minReplicas).toBeGreaterThanOrEqual(2);
      expect(spec.maxReplicas).toBeGreaterThanOrEqual(spec.minReplicas);
      expect(
        spec.metrics.map((metric) => [metric.type, metric.resource.name, metric.resource.target.type]),
      ).toEqual([["Resource", "cpu", "Utilization"]]);
      // Utilization is of the request: the edge container must have one.
      const container = containerOf(objects, EDGE.kind, EDGE.name, EDGE.container) as Container & {
        resources?: { requests?: { cpu?: string } };
      };
      expect(container.resources?.requests?.cpu).toBeTruthy();
    },
  );

  it.each(roleFiles)(
    "%s: the node listens, is probed and advertised on the node port, named after its node",
    (file) => {
      const objects = rendered.get(file)!;
      const node = containerOf(objects, NODE.kind, NODE.name, NODE.container);
      expect(node.ports).toEqual([{ name: "node", containerPort: NODE_PORT, protocol: "TCP" }]);
      expect(node.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "node" });
      expect(node.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "node" });
      const fields = Object.fromEntries(
        (node.env ?? []).filter((v) => v.valueFrom).map((v) => [v.name, v.valueFrom?.fieldRef?.fieldPath]),
      );
      expect(fields).toEqual({ POD_IP: "status.podIP", SANDPOOL_NODE_ID: "spec.nodeName" });
      const env = podEnv(objects, node);
      expect(env).toMatchObject({
        SANDPOOL_ROLE: "node",
        SANDPOOL_NODE_ADVERTISE_URL: `http://10.1.2.3:${NODE_PORT}`,
        SANDPOOL_NODE_ID: "sandbox-node-1",
        SANDPOOL_NODE_HOST: "0.0.0.0",
        SANDPOOL_NODE_PORT: String(NODE_PORT),
        SANDPOOL_NODE_SECRETS: "ci-placeholder-node-secret-of-at-least-32-bytes",
      });
      expect(env.DOCKER_HOST).toMatch(/^unix:\/\//);
    },
  );

  it.each(roleFiles)("%s: the edge has the role and the node secret, and no Docker engine", (file) => {
    const objects = rendered.get(file)!;
    const edge = containerOf(objects, EDGE.kind, EDGE.name, EDGE.container);
    const env = podEnv(objects, edge);
    expect(env.SANDPOOL_ROLE).toBe("edge");
    expect(env.SANDPOOL_NODE_SECRETS).toBe("ci-placeholder-node-secret-of-at-least-32-bytes");
    expect(env).not.toHaveProperty("DOCKER_HOST");
    expect(edge.ports?.map((port) => port.name)).toEqual(["http"]);
    const [deployment] = find(objects, "Deployment", "sandpool-edge");
    expect(podSpec(deployment!).volumes?.map((volume) => volume.name)).toEqual(["config", "tmp"]);
  });

  it.each(roleFiles)("%s: edge and node configurations pass the gateway's loader", (file) => {
    const objects = rendered.get(file)!;
    const label = path.basename(file, ".yaml");
    const edge = gatewayConfigOf(objects, `${label}-edge-roles`, EDGE) as Record<string, unknown>;
    const node = gatewayConfigOf(objects, `${label}-node-roles`, NODE) as Record<string, unknown>;
    if (schemaKnowsRoles) {
      // The roles are merged: the loader reads the role and the node's keys from the pod's env.
      expect(edge.role).toBe("edge");
      expect(node.role).toBe("node");
      expect(node.node).toMatchObject({
        host: "0.0.0.0",
        port: NODE_PORT,
        advertiseUrl: `http://10.1.2.3:${NODE_PORT}`,
        id: "sandbox-node-1",
      });
    } else {
      // Not yet: the env/args above are what the pods get; the shared file loads for both.
      expect(edge).not.toHaveProperty("role");
      expect(node).not.toHaveProperty("role");
    }
  });

  it("runs nodes only on the labelled, tainted sandbox nodes, with the host's socket", () => {
    const spec = podSpec(find(host(), "DaemonSet")[0]!);
    expect(spec.nodeSelector).toEqual({ "sandpool/sandbox-node": "true" });
    expect(spec.tolerations).toMatchObject([{ key: "sandpool/sandbox-node", effect: "NoSchedule" }]);
    const volumes = new Map((spec.volumes ?? []).map((volume) => [volume.name, volume]));
    expect(volumes.get("docker-socket")?.hostPath).toEqual({ path: "/var/run/docker.sock", type: "Socket" });
    expect(volumes.get("sandbox-sockets")?.hostPath?.path).toBe("/run/sandpool");
    expect(spec.securityContext?.supplementalGroups).toEqual([999]);
    expect(spec.initContainers?.map((container) => container.name)).toEqual(["socket-dir"]);
  });

  it("with DinD, gives each node pod its own engine and pulls the pools' images into it", () => {
    const spec = podSpec(find(dind(), "DaemonSet")[0]!);
    expect(spec.containers.map((container) => container.name)).toEqual(["dind", "node"]);
    const node = spec.containers[1]!;
    expect(node.env?.find((variable) => variable.name === "DOCKER_HOST")?.value).toBe(
      "unix:///run/dind/docker.sock",
    );
    expect(spec.containers[0]!.lifecycle?.postStart?.exec.command.join(" ")).toContain(
      'pull "sandpool/sandbox:dev"',
    );
  });

  it.each(roleFiles)("%s: the Service sends the contract to edges only", (file) => {
    const objects = rendered.get(file)!;
    const services = new Map(
      find(objects, "Service").map((service) => [
        service.metadata.name,
        (service as unknown as { spec: { selector: Labels; clusterIP?: string } }).spec,
      ]),
    );
    const edgeLabels = podLabels(find(objects, "Deployment", "sandpool-edge")[0]!);
    const nodeLabels = podLabels(find(objects, "DaemonSet", "sandpool-node")[0]!);
    expect(selects(services.get("sandpool")!.selector, edgeLabels)).toBe(true);
    expect(selects(services.get("sandpool")!.selector, nodeLabels)).toBe(false);
    // The nodes' Service is headless (for scraping); edges find nodes through Redis.
    expect(services.get("sandpool-node")?.clusterIP).toBe("None");
    expect(selects(services.get("sandpool-node")!.selector, nodeLabels)).toBe(true);
    expect(selects(services.get("sandpool-node")!.selector, edgeLabels)).toBe(false);
  });

  it("lets only edge pods (and Prometheus) reach the node port, and edges reach it", () => {
    const objects = host();
    const edgeLabels = podLabels(find(objects, "Deployment", "sandpool-edge")[0]!);
    const nodeLabels = podLabels(find(objects, "DaemonSet", "sandpool-node")[0]!);
    const policies = find(objects, "NetworkPolicy").map(
      (policy) => (policy as unknown as { spec: PolicySpec & { policyTypes: string[] } }).spec,
    );
    expect(policies).toHaveLength(2);
    const nodePolicies = policies.filter((policy) => selects(policy.podSelector.matchLabels, nodeLabels));
    expect(nodePolicies).toHaveLength(1);
    const nodePolicy = nodePolicies[0]!;
    expect(nodePolicy.policyTypes).toEqual(["Ingress", "Egress"]);
    expect(nodePolicy.ingress).toHaveLength(1);
    const [rule] = nodePolicy.ingress;
    expect(rule!.ports).toEqual([{ port: "node", protocol: "TCP" }]);
    const [edgePeer, ...others] = rule!.from as {
      podSelector?: { matchLabels: Labels };
      namespaceSelector?: unknown;
    }[];
    // The first peer selects this release's edge pods, and not its nodes.
    expect(selects(edgePeer!.podSelector!.matchLabels, edgeLabels)).toBe(true);
    expect(selects(edgePeer!.podSelector!.matchLabels, nodeLabels)).toBe(false);
    expect(edgePeer).not.toHaveProperty("namespaceSelector");
    // The only other: networkPolicy.metricsFrom, the monitoring namespace.
    expect(others).toEqual([
      { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } },
    ]);
    // The edges' policy does not cover nodes, and lets edges reach the nodes' port.
    const edgePolicy = policies.find((policy) => policy !== nodePolicy)!;
    expect(selects(edgePolicy.podSelector.matchLabels, edgeLabels)).toBe(true);
    expect(selects(edgePolicy.podSelector.matchLabels, nodeLabels)).toBe(false);
    const toNodes = edgePolicy.egress.filter((egress) =>
      (egress.ports ?? []).some((port) => port.port === NODE_PORT),
    );
    expect(toNodes).toHaveLength(1);
    const [nodePeer] = toNodes[0]!.to as { podSelector: { matchLabels: Labels } }[];
    expect(selects(nodePeer!.podSelector.matchLabels, nodeLabels)).toBe(true);
    // Postgres: the edges' to reach, never the nodes' (a node never opens it).
    const egressPorts = (policy: PolicySpec) =>
      policy.egress.flatMap((rule) => rule.ports ?? []).map((p) => p.port);
    expect(egressPorts(edgePolicy)).toContain(5432);
    expect(egressPorts(nodePolicy)).not.toContain(5432);
    expect(egressPorts(nodePolicy)).toContain(6379);
  });

  it("with a checkpoint volume, mounts one ReadWriteMany claim on every node and shares checkpoints", async () => {
    const base = [path.join(CI_DIR, "multinode-values.yaml")];
    const objects = await renderChart(base, [
      "roles.node.checkpoints.enabled=true",
      "roles.node.checkpoints.storageClassName=nfs",
      "roles.node.checkpoints.size=50Gi",
    ]);
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    const [claim] = find(objects, "PersistentVolumeClaim", "sandpool-checkpoints");
    expect((claim as unknown as { spec: unknown }).spec).toEqual({
      accessModes: ["ReadWriteMany"],
      storageClassName: "nfs",
      resources: { requests: { storage: "50Gi" } },
    });
    // It holds tenants' sessions: an uninstall leaves it.
    expect(claim!.metadata.annotations?.["helm.sh/resource-policy"]).toBe("keep");
    const spec = podSpec(find(objects, "DaemonSet", "sandpool-node")[0]!);
    const volume = (spec.volumes ?? []).find((candidate) => candidate.name === "checkpoints") as
      | { persistentVolumeClaim?: { claimName: string } }
      | undefined;
    expect(volume?.persistentVolumeClaim?.claimName).toBe("sandpool-checkpoints");
    const node = containerOf(objects, NODE.kind, NODE.name, NODE.container);
    const config = gatewayConfigOf(objects, "multinode-checkpoints-node", NODE);
    expect(config.hibernate).toMatchObject({ checkpointDir: "/var/lib/sandpool/checkpoints", shared: true });
    expect(node.volumeMounts).toContainEqual({
      name: "checkpoints",
      mountPath: config.hibernate.checkpointDir,
    });
    // Edges read the same file: they resume a session on any node.
    expect(gatewayConfigOf(objects, "multinode-checkpoints-edge", EDGE).hibernate.shared).toBe(true);
    const [edge] = find(objects, "Deployment", "sandpool-edge");
    expect(podSpec(edge!).volumes?.map((candidate) => candidate.name)).toEqual(["config", "tmp"]);

    // An existing claim is mounted, none made; a configured directory is where it goes.
    const existing = await renderChart(base, [
      "roles.node.checkpoints.enabled=true",
      "roles.node.checkpoints.existingClaim=team-checkpoints",
      "config.hibernate.checkpointDir=/checkpoints",
    ]);
    expect(existing.flatMap(schemaProblems)).toEqual([]);
    expect(find(existing, "PersistentVolumeClaim")).toEqual([]);
    const existingSpec = podSpec(find(existing, "DaemonSet", "sandpool-node")[0]!);
    expect(existingSpec.volumes).toContainEqual({
      name: "checkpoints",
      persistentVolumeClaim: { claimName: "team-checkpoints" },
    });
    expect(containerOf(existing, NODE.kind, NODE.name, NODE.container).volumeMounts).toContainEqual({
      name: "checkpoints",
      mountPath: "/checkpoints",
    });
    expect(gatewayConfigOf(existing, "multinode-existing-checkpoints", NODE).hibernate).toMatchObject({
      checkpointDir: "/checkpoints",
      shared: true,
    });
  });

  it("without a checkpoint volume, renders no claim and leaves checkpoints node-local", () => {
    for (const file of roleFiles) {
      const objects = rendered.get(file)!;
      expect(find(objects, "PersistentVolumeClaim")).toEqual([]);
      const spec = podSpec(find(objects, "DaemonSet", "sandpool-node")[0]!);
      // The host's own directory, at the same path: writable under a read-only root, and kept across restarts.
      expect(spec.volumes).toContainEqual({
        name: "checkpoints",
        hostPath: { path: "/var/lib/sandpool/checkpoints", type: "DirectoryOrCreate" },
      });
      expect(containerOf(objects, NODE.kind, NODE.name, NODE.container).volumeMounts).toContainEqual({
        name: "checkpoints",
        mountPath: "/var/lib/sandpool/checkpoints",
      });
      expect(
        gatewayConfigOf(objects, `${path.basename(file, ".yaml")}-local-checkpoints`, NODE).hibernate.shared,
      ).toBe(false);
    }
  });

  it("renders the autoscaler and the policies only when asked, and edges then keep their replicas", async () => {
    const objects = await renderChart(
      [path.join(CI_DIR, "multinode-values.yaml")],
      ["roles.edge.autoscaling.enabled=false", "networkPolicy.enabled=false", "roles.edge.replicas=3"],
    );
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    const kinds = objects.map((object) => object.kind);
    expect(kinds).not.toContain("HorizontalPodAutoscaler");
    expect(kinds).not.toContain("NetworkPolicy");
    const [edge] = find(objects, "Deployment", "sandpool-edge");
    expect((edge as unknown as { spec: { replicas: number } }).spec.replicas).toBe(3);
  });

  /** Every Secret a workload's pod refers to, anywhere (envFrom, env valueFrom, volumes). */
  const secretsReferencedBy = (workload: KubeObject): string[] => {
    const names = new Set<string>();
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (typeof node === "object" && node !== null) {
        const record = node as Record<string, unknown>;
        for (const [key, value] of Object.entries(record)) {
          if ((key === "secretRef" || key === "secretKeyRef") && typeof value === "object" && value !== null)
            names.add((value as { name: string }).name);
          if (key === "secret" && typeof value === "object" && value !== null)
            names.add((value as { secretName: string }).secretName);
          walk(value);
        }
      }
    };
    walk(podSpec(workload));
    return [...names];
  };
  /** What mints tokens or opens Postgres: none of it may reach a node. */
  const TOKEN_OR_DATABASE = /JWT|JWKS|DATABASE|INTROSPECTION/;
  const secretData = (objects: readonly KubeObject[], name: string) =>
    (find(objects, "Secret", name)[0] as unknown as { stringData: Record<string, string> } | undefined)
      ?.stringData;

  it.each(roleFiles)(
    "%s: nodes read a Secret of their own, with no token key and no database URL; edges still get both",
    (file) => {
      const objects = rendered.get(file)!;
      const [daemonSet] = find(objects, "DaemonSet", "sandpool-node");
      expect(secretsReferencedBy(daemonSet!)).toEqual(["sandpool-node"]);
      const nodeSecret = secretData(objects, "sandpool-node")!;
      expect(Object.keys(nodeSecret).sort()).toEqual(["REDIS_URL", "SANDPOOL_NODE_SECRETS"]);
      const node = containerOf(objects, NODE.kind, NODE.name, NODE.container);
      const env = podEnv(objects, node);
      expect(Object.keys(env).filter((name) => TOKEN_OR_DATABASE.test(name))).toEqual([]);
      const gatewaySecret = secretData(objects, "sandpool")!;
      for (const name of ["DATABASE_URL", "SANDPOOL_JWKS_URL", "SANDPOOL_JWT_SECRET"]) {
        const value = gatewaySecret[name];
        if (value !== undefined) expect(Object.values(env), name).not.toContain(value);
      }
      // The edges (and the migration Job) read the gateway's Secret, the token keys and Postgres in it.
      const [edge] = find(objects, "Deployment", "sandpool-edge");
      expect(secretsReferencedBy(edge!)).toEqual(["sandpool"]);
      const edgeEnv = podEnv(objects, containerOf(objects, EDGE.kind, EDGE.name, EDGE.container));
      expect(edgeEnv.DATABASE_URL).toMatch(/^postgres:\/\//);
      expect(
        Object.keys(edgeEnv).filter((name) => /^SANDPOOL_(JWT_SECRET|JWKS_URL)$/.test(name)),
      ).toHaveLength(1);
      expect(edgeEnv.SANDPOOL_NODE_SECRETS).toBe(env.SANDPOOL_NODE_SECRETS);
    },
  );

  it.each(roleFiles)("%s: the node's configuration needs neither, and serve would start it", (file) => {
    const objects = rendered.get(file)!;
    const config = gatewayConfigOf(objects, `${path.basename(file, ".yaml")}-node-alone`, NODE);
    if (!schemaKnowsRoles) return;
    expect(config.auth).toBeUndefined();
    expect(config.databaseUrl).toBeUndefined();
    expect(refusedForServe(config)).toEqual([]);
    expect(
      missingForServe({ databaseUrl: config.databaseUrl, redisConfigured: true, role: config.role }),
    ).toEqual([]);
  });

  it("with an existing Secret, asks for the nodes' own and gives each role its Secret", async () => {
    const base = [path.join(CI_DIR, "multinode-values.yaml")];
    await expect(renderChart(base, ["secrets.existingSecret=sandpool-env"])).rejects.toThrow(
      /secrets\.existingNodeSecret/,
    );
    const objects = await renderChart(base, [
      "secrets.existingSecret=sandpool-env",
      "secrets.existingNodeSecret=sandpool-node-env",
    ]);
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    expect(find(objects, "Secret")).toEqual([]);
    expect(secretsReferencedBy(find(objects, "DaemonSet", "sandpool-node")[0]!)).toEqual([
      "sandpool-node-env",
    ]);
    expect(secretsReferencedBy(find(objects, "Deployment", "sandpool-edge")[0]!)).toEqual(["sandpool-env"]);
    // Without roles it has no use: the chart says so rather than ignore it.
    await expect(
      renderChart(
        [path.join(CI_DIR, "default-values.yaml")],
        ["secrets.existingNodeSecret=sandpool-node-env"],
      ),
    ).rejects.toThrow(/existingNodeSecret goes with secrets\.existingSecret/);
  });

  it("with a metrics token, puts it in both roles' Secrets and scrapes each role with its own", async () => {
    const token = "a-metrics-token-of-at-least-32-bytes-0123";
    const objects = await renderChart(
      [path.join(CI_DIR, "multinode-values.yaml")],
      [`secrets.metricsToken=${token}`],
    );
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    type Endpoint = {
      port: string;
      authorization?: { type: string; credentials: { name: string; key: string } };
    };
    const endpoints = find(objects, "ServiceMonitor").flatMap(
      (monitor) => (monitor as unknown as { spec: { endpoints: Endpoint[] } }).spec.endpoints,
    );
    expect(endpoints.map((endpoint) => [endpoint.port, endpoint.authorization])).toEqual([
      ["http", { type: "Bearer", credentials: { name: "sandpool", key: "SANDPOOL_METRICS_TOKEN" } }],
      ["node", { type: "Bearer", credentials: { name: "sandpool-node", key: "SANDPOOL_METRICS_TOKEN" } }],
    ]);
    for (const name of ["sandpool", "sandpool-node"])
      expect(secretData(objects, name)?.SANDPOOL_METRICS_TOKEN, name).toBe(token);
    // Each role's pods read the token: /metrics wants it there.
    for (const workload of [EDGE, NODE])
      expect(
        podEnv(objects, containerOf(objects, workload.kind, workload.name, workload.container)),
      ).toHaveProperty("SANDPOOL_METRICS_TOKEN", token);
    // Without one (the shipped shapes), no authorization, and a short one is refused.
    for (const monitor of find(host(), "ServiceMonitor"))
      expect(JSON.stringify(monitor)).not.toContain("authorization");
    await expect(
      renderChart([path.join(CI_DIR, "multinode-values.yaml")], ["secrets.metricsToken=short"]),
    ).rejects.toThrow(/metricsToken/);
  });

  it("scrapes edges and nodes as job sandpool, each on its metrics port", () => {
    const objects = host();
    type Monitor = {
      spec: {
        jobLabel: string;
        selector: { matchLabels: Labels };
        endpoints: { port: string; path: string }[];
      };
    };
    const monitors = find(objects, "ServiceMonitor").map((monitor) => (monitor as unknown as Monitor).spec);
    const services = find(objects, "Service");
    const scraped = monitors.map((monitor) => {
      const targets = services.filter((service) =>
        selects(monitor.selector.matchLabels, service.metadata.labels ?? {}),
      );
      expect(targets).toHaveLength(1);
      expect(targets[0]!.metadata.labels?.[monitor.jobLabel]).toBe("sandpool");
      return `${targets[0]!.metadata.name}:${monitor.endpoints.map((e) => `${e.port}${e.path}`).join()}`;
    });
    expect(scraped.sort()).toEqual(["sandpool-node:node/metrics", "sandpool:http/metrics"]);
  });
});

describe("gVisor memory checkpoints (memoryCheckpoints): the engine's paths, seen at the same paths", () => {
  const NODE_SET = ["memoryCheckpoints.enabled=true"];
  /** The pod's workload, its volumes by name, and a container's mounts by volume name. */
  const podOf = (objects: readonly KubeObject[], kind: string, name: string) => {
    const spec = podSpec(find(objects, kind, name)[0]!);
    const volumes = new Map((spec.volumes ?? []).map((volume) => [volume.name, volume]));
    const mounts = (container: string) =>
      new Map(
        (spec.containers.find((candidate) => candidate.name === container)?.volumeMounts ?? []).map(
          (mount) => [mount.name, mount],
        ),
      );
    return { spec, volumes, mounts };
  };

  /**
   * With the host's engine: the checkpoint directory the gateway configuration names and the
   * engine's data root are both the host's own directories, mounted at their host paths; the
   * container is root with DAC_OVERRIDE alone, never privileged.
   */
  const expectHostPaths = (
    objects: readonly KubeObject[],
    workload: { kind: string; name: string; container: string },
    dataRoot: string,
    label: string,
  ) => {
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    const { volumes, mounts, spec } = podOf(objects, workload.kind, workload.name);
    const mounted = mounts(workload.container);
    const checkpointDir = gatewayConfigOf(objects, label, workload).hibernate.checkpointDir;
    expect(mounted.get("checkpoints")?.mountPath).toBe(checkpointDir);
    expect(volumes.get("checkpoints")?.hostPath).toEqual({ path: checkpointDir, type: "DirectoryOrCreate" });
    expect(mounted.get("engine-data-root")).toEqual({
      name: "engine-data-root",
      mountPath: dataRoot,
      mountPropagation: "HostToContainer",
    });
    expect(volumes.get("engine-data-root")?.hostPath).toEqual({ path: dataRoot, type: "Directory" });
    const container = spec.containers.find((candidate) => candidate.name === workload.container)!;
    expect(container.securityContext).toMatchObject({
      runAsUser: 0,
      runAsNonRoot: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"], add: ["DAC_OVERRIDE"] },
    });
    expect(container.securityContext?.privileged).toBeUndefined();
  };

  it("off (every shipped shape): no data root mounted, and sandpool runs as its own user", () => {
    for (const file of ciFiles) {
      const objects = rendered.get(file)!;
      for (const workload of objects.filter((object) => WORKLOADS.has(object.kind))) {
        const spec = podSpec(workload);
        expect(spec.volumes?.map((volume) => volume.name) ?? []).not.toContain("engine-data-root");
        for (const container of spec.containers.filter((candidate) => candidate.name !== "dind")) {
          expect(container.securityContext?.runAsUser, `${file} ${container.name}`).toBe(10000);
          expect(container.volumeMounts?.map((mount) => mount.mountPath) ?? []).not.toContain(
            "/var/lib/docker",
          );
        }
      }
    }
  });

  it("with the host's engine, each node mounts its data root and checkpoint directory at the host's paths", async () => {
    const objects = await renderChart(
      [path.join(CI_DIR, "multinode-values.yaml")],
      [...NODE_SET, "hostDocker.dataRoot=/data/docker", "config.hibernate.checkpointDir=/srv/checkpoints"],
    );
    expectHostPaths(objects, NODE, "/data/docker", "memory-host-node");
    // The edges run no engine: nothing of it is theirs.
    const edge = podOf(objects, EDGE.kind, EDGE.name);
    expect([...edge.volumes.keys()]).toEqual(["config", "tmp"]);
  });

  it("with the host's engine, the single gateway mounts them the same way", async () => {
    const objects = await renderChart([path.join(CI_DIR, "host-socket-values.yaml")], NODE_SET);
    expectHostPaths(
      objects,
      { kind: "Deployment", name: "sandpool", container: "gateway" },
      "/var/lib/docker",
      "memory-host-gateway",
    );
  });

  it.each([
    ["a node-local", []],
    ["a shared", ["roles.node.checkpoints.enabled=true"]],
  ])(
    "with DinD and %s store, the sidecar and the node see the checkpoints and the engine's storage at one path",
    async (_, set) => {
      const objects = await renderChart(
        [path.join(CI_DIR, "multinode-dind-values.yaml")],
        [...NODE_SET, ...set],
      );
      expect(objects.flatMap(schemaProblems)).toEqual([]);
      const { mounts, volumes } = podOf(objects, NODE.kind, NODE.name);
      const [engine, node] = [mounts("dind"), mounts("node")];
      const checkpointDir = gatewayConfigOf(objects, "memory-dind-node", NODE).hibernate.checkpointDir;
      expect(engine.get("checkpoints")?.mountPath).toBe(checkpointDir);
      expect(node.get("checkpoints")?.mountPath).toBe(checkpointDir);
      // The engine's data root is its storage at /var/lib/docker: the node mounts it there too.
      expect(engine.get("dind-storage")?.mountPath).toBe("/var/lib/docker");
      expect(node.get("dind-storage")?.mountPath).toBe("/var/lib/docker");
      expect(volumes.get("checkpoints")?.persistentVolumeClaim !== undefined).toBe(set.length > 0);
    },
  );

  it("refuses a claim with the host's engine (it writes on its host), and takes a host-mounted shared store (onHost)", async () => {
    const base = [path.join(CI_DIR, "multinode-values.yaml")];
    await expect(renderChart(base, [...NODE_SET, "roles.node.checkpoints.enabled=true"])).rejects.toThrow(
      /roles\.node\.checkpoints\.onHost/,
    );
    const objects = await renderChart(base, [
      ...NODE_SET,
      "roles.node.checkpoints.enabled=true",
      "roles.node.checkpoints.onHost=true",
    ]);
    expectHostPaths(objects, NODE, "/var/lib/docker", "memory-on-host-node");
    expect(find(objects, "PersistentVolumeClaim")).toEqual([]);
    expect(gatewayConfigOf(objects, "memory-on-host-shared", NODE).hibernate.shared).toBe(true);
  });

  it("gives the single gateway with an engine a writable checkpoint directory (its root file system is read-only)", () => {
    for (const file of ["default-values.yaml", "host-socket-values.yaml"]) {
      const objects = rendered.get(file)!;
      const { mounts } = podOf(objects, "Deployment", "sandpool");
      const label = `${path.basename(file, ".yaml")}-checkpoints`;
      expect(mounts("gateway").get("checkpoints")?.mountPath).toBe(
        gatewayConfigOf(objects, label).hibernate.checkpointDir,
      );
    }
  });
});
