/**
 * docs/configuration.md, rendered from the configuration schema the loader uses
 * (gatewayConfigSchema), the documentation registered on its fields (the one-line comments
 * `sandpool config example` prints) and the environment variables registered there
 * (configEnvVariables): every setting,
 * its kind, its default, the variables that set it. Like the example file, it cannot drift
 * from what the loader accepts; configuration-doc.test.ts fails when the file is stale.
 */
import { stringify } from "yaml";
import type { z } from "zod";
import { configEnvVariables } from "../../../src/config/config-env.js";
import { gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import { formatKeyPath, unwrap } from "../../../src/contract/did-you-mean.js";
import { settingDocOf } from "../../../src/contract/setting-docs.js";

type Schema = z.core.$ZodType;

export const CONFIGURATION_DOC = "docs/configuration.md";
export const REGENERATE = "SANDPOOL_UPDATE_DOCS=1 npx vitest run test/unit/docs/configuration-doc.test.ts";

const intro = [
  "# Configuration",
  "",
  `<!-- Generated from the configuration schema (src/config/). Do not edit: run ${REGENERATE} -->`,
  "",
  "`sandpool serve` reads one configuration: a YAML file (`--config sandpool.yaml`) and environment",
  "variables, which win over the file (an empty variable counts as unset). Unknown keys and unknown",
  "`SANDPOOL_*` variables are errors with a did-you-mean.",
  "",
  "```sh",
  "npx sandpool config example > sandpool.yaml        # every setting below, commented, loading as it is",
  "npx sandpool config check --config sandpool.yaml   # the effective configuration, secrets redacted",
  "```",
  "",
  "`sandpool dev` needs none of it: it configures itself (its flags: `npx sandpool dev --help`).",
  "How the settings fit together in a deployment (Redis shapes, the docker runtime, tokens,",
  "roles) is in [deploying.md](deploying.md); a workspace's policy row may narrow the `policy`",
  "block ([operating.md](operating.md#workspace-policy)).",
  "",
  "This page is generated from the schema the loader checks, so it lists exactly what",
  "the loader accepts. Each setting: its kind, then its default (or that it is required or",
  "has none), what it does, and the environment variables that set it.",
];

function defaultOf(field: Schema): unknown {
  const result = (field as z.ZodType).safeParse(undefined);
  return result.success ? result.data : undefined;
}

function defOf(schema: Schema): z.core.$ZodTypes["_zod"]["def"] {
  return (unwrap(schema) as z.core.$ZodTypes)._zod.def;
}

function kindOf(schema: Schema): string {
  const def = defOf(schema);
  switch (def.type) {
    case "string":
      return "string";
    case "number": {
      // .int() leaves its format on the schema (zod's classic API), not in its def.
      const format = (unwrap(schema) as { format?: string | null }).format;
      return format?.includes("int") ? "integer" : "number";
    }
    case "boolean":
      return "boolean";
    case "enum":
      return `one of ${Object.values((def as { entries: Record<string, string> }).entries)
        .map((value) => `\`${value}\``)
        .join(", ")}`;
    case "literal":
      return `\`${(def as { values: unknown[] }).values.join("`, `")}\``;
    case "array":
      return `list of ${kindOf((def as { element: Schema }).element)}`;
    case "record":
      return "map of name to object";
    case "object":
      return "object";
    case "union":
      return (def.options as readonly Schema[]).map(kindOf).join(" or ");
    default:
      return def.type;
  }
}

function inline(value: unknown): string {
  if (typeof value === "string" && value.includes("\n")) return JSON.stringify(value);
  const text = stringify(value, {
    collectionStyle: "flow",
    flowCollectionPadding: false,
    lineWidth: 0,
  }).trimEnd();
  return text === "" ? '""' : text;
}

function environmentOf(name: string): string[] {
  return configEnvVariables
    .filter((variable) => variable.path.replace(/\[default\]/, "[]") === name)
    .map((variable) =>
      variable.path.includes("[default]")
        ? `\`${variable.name}\` (the default image's pool)`
        : `\`${variable.name}\``,
    );
}

function entry(name: string, field: Schema, inOptional: boolean): string[] {
  const doc = settingDocOf(field);
  const fallback = defaultOf(field);
  const required = field._zod.optin === undefined && !inOptional;
  const facts = [kindOf(field)];
  if (fallback !== undefined && defOf(field).type !== "object") facts.push(`default \`${inline(fallback)}\``);
  else if (required) facts.push("required");
  else if (fallback === undefined) facts.push("no default");
  const env = environmentOf(name);
  // Some comments name their variable already ("Env X."): the list below names every one.
  const comment = (doc?.doc ?? "").replace(/ Env [A-Z_]+\.$/, "");
  const environment = env.length > 0 ? ` Environment: ${env.join(", ")}.` : "";
  return [`- \`${name}\` (${facts.join("; ")})${comment === "" ? "." : `: ${comment}`}${environment}`];
}

interface Section {
  heading: string;
  comment?: string;
  lines: string[];
}

/** One section per object (nested ones too), its scalar settings as a list. */
function collect(
  shape: Record<string, Schema>,
  path: string[],
  inOptional: boolean,
  sections: Section[],
  own: Section,
): void {
  for (const [key, field] of Object.entries(shape)) {
    const fieldPath = [...path, key];
    const name = formatKeyPath(fieldPath);
    const def = defOf(field);
    const optionalHere = inOptional || (field._zod.optin !== undefined && defaultOf(field) === undefined);
    const element = def.type === "array" ? defOf((def as { element: Schema }).element) : undefined;
    const value = def.type === "record" ? defOf((def as { valueType: Schema }).valueType) : undefined;
    if (def.type === "object") {
      const section: Section = { heading: name, comment: settingDocOf(field)?.doc, lines: [] };
      sections.push(section);
      collect(def.shape as Record<string, Schema>, fieldPath, optionalHere, sections, section);
    } else if (element?.type === "object") {
      const section: Section = { heading: `${name}[]`, comment: settingDocOf(field)?.doc, lines: [] };
      sections.push(section);
      collect(element.shape as Record<string, Schema>, [...fieldPath, "[]"], optionalHere, sections, section);
    } else if (value?.type === "object") {
      own.lines.push(...entry(name, field, optionalHere));
      for (const [inner, innerField] of Object.entries(value.shape as Record<string, Schema>)) {
        const innerName = formatKeyPath([...fieldPath, "*", inner]);
        own.lines.push(`  ${entry(innerName, innerField, false)[0]}`);
      }
    } else {
      own.lines.push(...entry(name, field, optionalHere));
    }
  }
}

/** The whole of docs/configuration.md. */
export function renderConfigurationDoc(): string {
  const root = unwrap(gatewayConfigSchema) as z.core.$ZodObject;
  const top: Section = { heading: "", lines: [] };
  const sections: Section[] = [top];
  collect(root._zod.def.shape as Record<string, Schema>, [], false, sections, top);
  const body: string[] = [];
  for (const section of sections) {
    if (section.lines.length === 0) continue;
    body.push("", section.heading === "" ? "## Top-level settings" : `## \`${section.heading}\``, "");
    if (section.comment) body.push(section.comment, "");
    body.push(...section.lines);
  }
  const width = configEnvVariables.length;
  const environment = [
    "",
    "## Environment variables",
    "",
    `All ${width} of them; each overrides the setting it names.`,
    "",
    ...configEnvVariables.map(
      (variable) => `- \`${variable.name}\` (\`${variable.path}\`): ${variable.description}`,
    ),
  ];
  return `${[...intro, ...body, ...environment].join("\n")}\n`;
}
