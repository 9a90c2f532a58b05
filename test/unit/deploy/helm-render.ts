/**
 * The chart as the real helm renders it (helm-binary.ts), and every rendered object checked
 * against the Kubernetes schemas of the kubernetes-models packages (core, apps, batch,
 * networking, policy, autoscaling; the Prometheus Operator's CRDs). A kind no package knows
 * fails: the chart must not render objects nothing here can check.
 */

import * as monitoringV1 from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
import * as appsV1 from "kubernetes-models/apps/v1";
import * as autoscalingV2 from "kubernetes-models/autoscaling/v2";
import * as batchV1 from "kubernetes-models/batch/v1";
import * as networkingV1 from "kubernetes-models/networking.k8s.io/v1";
import * as policyV1 from "kubernetes-models/policy/v1";
import * as coreV1 from "kubernetes-models/v1";
import { parseAllDocuments } from "yaml";
import { repoPath } from "./deploy-files.js";
import { helm } from "./helm-binary.js";

export const CHART_DIR = repoPath("helm/sandpool");

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

interface ModelClass {
  apiVersion: string;
  kind: string;
  new (data: unknown): { validate(): void };
}

function isModel(value: unknown): value is ModelClass {
  return (
    typeof value === "function" &&
    typeof (value as Partial<ModelClass>).apiVersion === "string" &&
    typeof (value as Partial<ModelClass>).kind === "string"
  );
}

/** `apiVersion kind` -> its model, for every top-level kind of the modules above. */
const models = new Map<string, ModelClass>();
for (const module of [coreV1, appsV1, batchV1, networkingV1, policyV1, autoscalingV2, monitoringV1])
  for (const exported of Object.values(module))
    if (isModel(exported)) models.set(`${exported.apiVersion} ${exported.kind}`, exported);

/** The problems of one rendered object: an unknown kind, or what its schema rejects. */
export function schemaProblems(object: KubeObject): string[] {
  const where = `${object.kind}/${object.metadata?.name}`;
  const model = models.get(`${object.apiVersion} ${object.kind}`);
  if (!model) return [`${where}: no schema for ${object.apiVersion} ${object.kind}`];
  try {
    new model(object).validate();
    return [];
  } catch (error) {
    const found = error as Error & { errors?: { instancePath: string; message?: string }[] };
    return (found.errors ?? [{ instancePath: "", message: found.message }]).map(
      (problem) => `${where}${problem.instancePath}: ${problem.message}`,
    );
  }
}

/** `helm template` of the chart with the given values files and --set flags, as objects. */
export async function renderChart(
  valuesFiles: readonly string[],
  set: readonly string[] = [],
): Promise<KubeObject[]> {
  const args = ["template", "sandpool", CHART_DIR, "--namespace", "sandbox"];
  for (const file of valuesFiles) args.push("--values", file);
  for (const flag of set) args.push("--set", flag);
  const { stdout } = await helm(args);
  return parseAllDocuments(stdout)
    .map((document) => {
      if (document.errors.length > 0) throw new Error(`helm template: ${document.errors[0]!.message}`);
      return document.toJS() as KubeObject | null;
    })
    .filter((object): object is KubeObject => object !== null);
}

/** `helm lint --strict` of the chart with the given values file; rejects on any finding. */
export async function lintChart(valuesFile: string): Promise<string> {
  return (await helm(["lint", "--strict", CHART_DIR, "--values", valuesFile])).stdout;
}
