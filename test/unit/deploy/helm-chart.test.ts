import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { configEnvVariables } from "../../../src/config/config-env.js";
import type { GatewayConfig } from "../../../src/config/gateway-config.js";
import { loadGatewayConfig } from "../../../src/config/load-config.js";
import { dockerRuntimeOptionsSchema } from "../../../src/runtime/docker/docker-runtime-options.js";
import { readJson, readText, readYaml, repoPath } from "./deploy-files.js";
import { ROLE_ENV_VARIABLES } from "./roles-interface.js";

const CHART = "helm/sandpool";
const TEMPLATES = `${CHART}/templates`;

interface Values {
  replicaCount: number;
  config: Record<string, unknown> & { port: number; shutdownGraceMs: number };
  [key: string]: unknown;
}

const chart = readYaml<Record<string, unknown>>(`${CHART}/Chart.yaml`);
const values = readYaml<Values>(`${CHART}/values.yaml`);
const templateFiles = readdirSync(repoPath(TEMPLATES));
const templates = new Map(templateFiles.map((file) => [file, readText(`${TEMPLATES}/${file}`)]));
const allTemplates = [...templates.values()].join("\n");

const dir = mkdtempSync(path.join(tmpdir(), "sandpool-helm-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** DOCKER_HOST when the DinD sidecar is on, as _helpers.tpl writes it. */
function dindDockerHost(): string {
  const define = /define "sandpool\.dockerHost"[\s\S]*?\n(unix:\/\/\/\S+)\n/.exec(
    templates.get("_helpers.tpl")!,
  );
  if (!define) throw new Error("_helpers.tpl: sandpool.dockerHost has no unix:// socket");
  return define[1]!;
}

/**
 * values.config as the pod sees it: the ConfigMap's file, with the environment the chart sets
 * (the Secret's variables and DOCKER_HOST) over it, through the gateway's own loader.
 */
function loadValuesConfig(keySource: Record<string, string>): GatewayConfig {
  const file = path.join(dir, `values-config-${Object.keys(keySource).join("-")}.yaml`);
  writeFileSync(file, stringify(values.config));
  return loadGatewayConfig({
    file,
    env: {
      DATABASE_URL: "postgres://sandpool:secret@postgres:5432/sandpool",
      REDIS_URL: "redis://redis:6379",
      DOCKER_HOST: dindDockerHost(),
      ...keySource,
    },
  });
}

/** `.Values.a.b` paths the templates read. */
function valuesPaths(): string[] {
  const paths = [...allTemplates.matchAll(/\$?\.Values((?:\.[A-Za-z_]\w*)+)/g)].map((m) => m[1]!.slice(1));
  return [...new Set(paths)].sort();
}

function hasPath(root: unknown, dotted: string): boolean {
  let current = root;
  for (const key of dotted.split(".")) {
    if (typeof current !== "object" || current === null || !(key in current)) return false;
    current = (current as Record<string, unknown>)[key];
  }
  return true;
}

describe("helm/sandpool: Chart.yaml and values.yaml", () => {
  it("is a v2 application chart whose appVersion is the package's version", () => {
    const pkg = readJson<{ version: string }>("package.json");
    expect(chart).toMatchObject({ apiVersion: "v2", name: "sandpool", type: "application" });
    expect(chart.version).toMatch(/^\d+\.\d+\.\d+(?:-[\w.]+)?$/);
    expect(chart.appVersion).toBe(pkg.version);
  });

  it("holds a config block that passes the gateway's own validation with either key source", () => {
    const withSecret = loadValuesConfig({
      SANDPOOL_JWT_SECRET: "a-test-secret-that-is-at-least-32-bytes-long",
    });
    expect(withSecret.auth?.algorithms).toEqual(["HS256"]);
    const withJwks = loadValuesConfig({ SANDPOOL_JWKS_URL: "https://issuer.test/.well-known/jwks.json" });
    expect(withJwks.auth?.jwksUrl).toBeDefined();
    // Listening on the pod's address: the Service and the probes reach it there.
    expect(withSecret.host).toBe("0.0.0.0");
    expect(withSecret.runtime.kind).toBe("docker");
    const options = dockerRuntimeOptionsSchema.parse({
      ...withSecret.runtime.docker,
      deployment: withSecret.deployment,
      execTimeoutCeilingSeconds: withSecret.policy.execTimeoutCeilingSeconds,
      maxFileBytes: withSecret.policy.maxFileBytes,
    });
    expect(options.hosts).toEqual([dindDockerHost()]);
  });

  it("keeps secrets out of the config block", () => {
    const config = values.config as { auth?: Record<string, unknown> };
    for (const key of ["jwtSecret", "jwtPublicKey", "jwksUrl"])
      expect(config.auth?.[key], key).toBeUndefined();
    expect(values.config).not.toHaveProperty("databaseUrl");
    expect(values.config).not.toHaveProperty("redisUrl");
  });
});

describe("helm/sandpool: templates", () => {
  it("has every template the chart needs", () => {
    for (const file of [
      "_helpers.tpl",
      "NOTES.txt",
      "deployment.yaml",
      "service.yaml",
      "configmap.yaml",
      "secret.yaml",
      "node-secret.yaml",
      "serviceaccount.yaml",
      "migration-job.yaml",
      "policy-apply-job.yaml",
      "pdb.yaml",
      "servicemonitor.yaml",
      "prometheusrule.yaml",
      "grafana-dashboard.yaml",
      "ingress.yaml",
      "networkpolicy.yaml",
      "_engine.tpl",
      "edge-deployment.yaml",
      "node-daemonset.yaml",
      "networkpolicy-node.yaml",
    ])
      expect(templateFiles).toContain(file);
  });

  it("references only template files that exist and helpers that are defined", () => {
    for (const match of allTemplates.matchAll(/\.Template\.BasePath "\/([^"]+)"/g))
      expect(existsSync(repoPath(TEMPLATES, match[1]!)), match[1]).toBe(true);
    const defined = new Set([...allTemplates.matchAll(/define "([^"]+)"/g)].map((m) => m[1]!));
    for (const match of allTemplates.matchAll(/(?:include|template) "([^"]+)"/g))
      expect(defined.has(match[1]!), match[1]).toBe(true);
  });

  it("closes every block it opens", () => {
    for (const [file, text] of templates) {
      const actions = [...text.matchAll(/\{\{-?\s*(if|range|with|define|block|end)\b/g)].map((m) => m[1]);
      const opened = actions.filter((action) => action !== "end").length;
      expect(actions.length - opened, file).toBe(opened);
    }
  });

  it("reads only values that values.yaml defines", () => {
    const paths = valuesPaths();
    expect(paths.length).toBeGreaterThan(20);
    expect(paths.filter((dotted) => !hasPath(values, dotted))).toEqual([]);
  });

  it("puts in the Secret and the pods only variables the gateway's configuration reads", () => {
    // The roles' variables too, where src/ does not read them yet (roles-interface.ts).
    const known = new Set([...configEnvVariables.map((variable) => variable.name), ...ROLE_ENV_VARIABLES]);
    const keysOf = (file: string) =>
      [...templates.get(file)!.matchAll(/^\s+([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]!);
    const keys = keysOf("secret.yaml");
    expect(keys).toEqual(expect.arrayContaining(["DATABASE_URL", "REDIS_URL", "SANDPOOL_NODE_SECRETS"]));
    expect(keys.filter((key) => !known.has(key))).toEqual([]);
    // The nodes' Secret: what a node uses, a subset of the gateway's.
    const nodeKeys = keysOf("node-secret.yaml");
    expect(nodeKeys).toEqual(
      expect.arrayContaining(["REDIS_URL", "SANDPOOL_NODE_SECRETS", "SANDPOOL_METRICS_TOKEN"]),
    );
    expect(nodeKeys.filter((key) => !keys.includes(key))).toEqual([]);
    expect(nodeKeys.filter((key) => /JWT|JWKS|DATABASE|INTROSPECTION/.test(key))).toEqual([]);
    for (const file of ["deployment.yaml", "edge-deployment.yaml", "node-daemonset.yaml"]) {
      const env = [...templates.get(file)!.matchAll(/- name: ([A-Z][A-Z0-9_]+)$/gm)].map((m) => m[1]!);
      expect(env.length, file).toBeGreaterThan(0);
      // POD_IP only feeds $(POD_IP) in SANDPOOL_NODE_ADVERTISE_URL, a Kubernetes substitution.
      expect(
        env.filter((key) => !known.has(key) && key !== "POD_IP"),
        file,
      ).toEqual([]);
    }
  });

  it("runs serve with probes on /healthz and /readyz, non-root on a read-only root", () => {
    const deployment = templates.get("deployment.yaml")!;
    expect(deployment).toContain('args: ["serve", "--config", "/etc/sandpool/sandpool.yaml"]');
    expect(deployment).toMatch(/livenessProbe:\n\s+httpGet:\n\s+path: \/healthz/);
    expect(deployment).toMatch(/readinessProbe:\n\s+httpGet:\n\s+path: \/readyz/);
    // The kill comes after the gateway's own grace.
    expect(deployment).toMatch(/terminationGracePeriodSeconds:.*\$grace/);
    expect(deployment).toMatch(/\$grace := add .*\.Values\.config\.shutdownGraceMs/);
    expect(values.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
    expect((values.securityContext as { runAsUser: number }).runAsUser).toBeGreaterThan(0);
  });

  it("shares /run/sandpool between the engine and the gateway, which is not the sandboxes' user", () => {
    // The engine's parts of the gateway's and the node's pods (deployment.yaml, node-daemonset.yaml).
    const deployment = templates.get("_engine.tpl")!;
    // Mounted at that one path wherever it is mounted (dind, the host shape's init container,
    // the gateway); with dind, from an in-memory emptyDir (the rendered shapes: helm-render.test.ts).
    const mounts = [...deployment.matchAll(/- name: sandbox-sockets\n\s+mountPath: (\S+)/g)].map((m) => m[1]);
    expect(mounts).toEqual(["/run/sandpool", "/run/sandpool", "/run/sandpool"]);
    expect(deployment).toMatch(/- name: sandbox-sockets\n\s+emptyDir:\n\s+medium: Memory/);
    const sandboxUser = dockerRuntimeOptionsSchema.parse({ deployment: "x", hosts: [dindDockerHost()] }).user;
    expect((values.securityContext as { runAsUser: number }).runAsUser).not.toBe(
      Number(sandboxUser.split(":")[0]),
    );
  });

  it("applies values.policies after install and upgrade with an admin token from a Secret key", () => {
    const job = templates.get("policy-apply-job.yaml")!;
    // No Job (nor ConfigMap) unless policies are given; none are by default.
    expect(job).toMatch(/^\{\{- if \.Values\.policies \}\}\n/);
    expect(values.policies).toEqual({});
    expect(job).toMatch(/helm\.sh\/hook: post-install,post-upgrade/);
    // The file the CLI reads is the ConfigMap's key, mounted where args say, in the shape
    // `policy apply -f` takes ({ policies: { <workspace>: fields } }).
    const file = /args: \["policy", "apply", "-f", "([^"]+)"\]/.exec(job)?.[1];
    expect(file).toBeDefined();
    expect(job).toContain(`mountPath: ${path.dirname(file!)}`);
    expect(job).toMatch(
      new RegExp(
        `${path.basename(file!).replace(".", "\\.")}: \\|\\n\\s+\\{\\{- dict "policies" \\.Values\\.policies \\| toYaml`,
      ),
    );
    // The token comes from a Secret the operator names (required), never from values in clear.
    expect(job).toMatch(
      /- name: SANDPOOL_ADMIN_TOKEN\n\s+valueFrom:\n\s+secretKeyRef:\n\s+name: \{\{ required "[^"]+" \.Values\.policyApply\.adminTokenSecret\.name \}\}\n\s+key: \{\{ \.Values\.policyApply\.adminTokenSecret\.key \}\}/,
    );
    expect(values.policyApply).toMatchObject({ adminTokenSecret: { key: "SANDPOOL_ADMIN_TOKEN" } });
    expect(job).toMatch(/- name: SANDPOOL_URL\n\s+value: \{\{ \.Values\.policyApply\.url \| default/);
    const podTemplate = job.slice(job.indexOf("  template:"));
    expect(podTemplate).not.toContain('include "sandpool.selectorLabels"');
  });

  it("migrates in a pre-install/pre-upgrade hook, after the Secret it reads", () => {
    const job = templates.get("migration-job.yaml")!;
    expect(job).toContain('args: ["migrate"]');
    expect(job).toMatch(/helm\.sh\/hook: pre-install,pre-upgrade/);
    const weight = (text: string) => Number(/helm\.sh\/hook-weight: "(-?\d+)"/.exec(text)![1]);
    expect(weight(templates.get("secret.yaml")!)).toBeLessThan(weight(job));
    // Its pod must not look like a gateway to the Service or the PodDisruptionBudget.
    const podTemplate = job.slice(job.indexOf("  template:"));
    expect(podTemplate).not.toContain('include "sandpool.selectorLabels"');
  });
});
