/**
 * `sandpool config example`: a complete, commented configuration file. It is rendered from the
 * schema itself (key order, which keys are required, every default), so it cannot drift from
 * what the loader accepts; only the one-line comments and the placeholder values of settings
 * without a default are written by hand, on the fields themselves (src/contract/setting-docs.ts).
 * Optional settings are shown commented out with their default; required ones are active, so
 * the file loads as it is.
 */
import { stringify } from "yaml";
import type { z } from "zod";
import { formatKeyPath, unwrap } from "../contract/did-you-mean.js";
import { settingDocOf } from "../contract/setting-docs.js";
import { configEnvVariables } from "./config-env.js";
import { sharedSettingDocs } from "./config-settings.js";
import { gatewayConfigSchema } from "./gateway-config.js";

type Schema = z.core.$ZodType;

interface Line {
  indent: number;
  text: string;
  kind: "comment" | "active" | "disabled" | "blank";
}

function inline(value: unknown): string {
  if (typeof value === "string" && value.includes("\n")) return JSON.stringify(value);
  return stringify(value, { collectionStyle: "flow", flowCollectionPadding: false, lineWidth: 0 }).trimEnd();
}

/** The value a field takes when the key is absent, if it has one. */
function defaultOf(field: Schema): unknown {
  const result = (field as z.ZodType).safeParse(undefined);
  return result.success ? result.data : undefined;
}

interface Rendered {
  lines: Line[];
  active: boolean;
}

/**
 * `inOptional`: the object itself may be absent (adminListener, runtime.docker.tls), so its
 * required keys are shown commented out too: an active one would switch the object on.
 */
function renderObject(
  shape: Record<string, Schema>,
  path: string[],
  indent: number,
  undocumented: string[],
  inOptional = false,
): Rendered {
  const lines: Line[] = [];
  let anyActive = false;
  for (const [key, field] of Object.entries(shape)) {
    const fieldPath = [...path, key];
    const name = formatKeyPath(fieldPath);
    const doc = settingDocOf(field);
    if (!doc) undocumented.push(name);
    if (indent === 0 && lines.length > 0) lines.push({ indent, text: "", kind: "blank" });
    const required = field._zod.optin === undefined;
    const inner = unwrap(field);
    const def = (inner as z.core.$ZodTypes)._zod.def;
    const element = def.type === "array" ? unwrap(def.element) : undefined;
    const elementDef = element ? (element as z.core.$ZodTypes)._zod.def : undefined;

    const optionalObject = inOptional || (field._zod.optin !== undefined && defaultOf(field) === undefined);
    if (def.type === "object") {
      const child = renderObject(def.shape, fieldPath, indent + 2, undocumented, optionalObject);
      if (doc) lines.push({ indent, text: doc.doc, kind: "comment" });
      lines.push({ indent, text: `${key}:`, kind: child.active ? "active" : "disabled" });
      lines.push(...child.lines);
      anyActive ||= child.active;
    } else if (elementDef?.type === "object") {
      const item = renderObject(
        elementDef.shape,
        [...fieldPath, "[]"],
        indent + 4,
        undocumented,
        optionalObject,
      );
      const first = item.lines.findIndex((line) => line.kind === "active" || line.kind === "disabled");
      for (const [index, line] of item.lines.entries()) {
        if (index < first) line.indent = indent + 2;
        if (index === first) {
          line.indent = indent + 2;
          line.text = `- ${line.text}`;
        }
      }
      if (doc) lines.push({ indent, text: doc.doc, kind: "comment" });
      lines.push({ indent, text: `${key}:`, kind: item.active ? "active" : "disabled" });
      lines.push(...item.lines);
      anyActive ||= item.active;
    } else {
      const fallback = defaultOf(field);
      const value = fallback !== undefined ? fallback : doc?.example;
      const active = (required && !inOptional) || doc?.active === true;
      if (value === undefined) undocumented.push(`${name} (no default and no example value)`);
      if (doc) lines.push({ indent, text: doc.doc, kind: "comment" });
      lines.push({ indent, text: `${key}: ${inline(value ?? null)}`, kind: active ? "active" : "disabled" });
      anyActive ||= active;
    }
  }
  return { lines, active: anyActive };
}

function environmentBlock(): string[] {
  const width = Math.max(...configEnvVariables.map((v) => v.name.length));
  return [
    "Environment variables override this file (empty ones count as unset). An auth key source",
    "set here replaces the file's. Unknown SANDPOOL_ variables are errors.",
    ...configEnvVariables.map((v) => `  ${v.name.padEnd(width)}  ${v.path}: ${v.description}`),
  ];
}

/** The example and the config paths it could not document (a test keeps the list empty). */
export function renderConfigExample(): { text: string; undocumented: string[] } {
  const undocumented: string[] = sharedSettingDocs();
  const root = unwrap(gatewayConfigSchema) as z.core.$ZodObject;
  const body = renderObject(root._zod.def.shape, [], 0, undocumented);
  const header = [
    "sandpool gateway configuration, as printed by sandpool config example.",
    "Check a file with the environment applied: sandpool config check --config sandpool.yaml",
    "Settings commented out are optional and show their default. Unknown keys are errors.",
  ];
  const text = [
    ...header.map((line) => `# ${line}`),
    "",
    ...body.lines.map((line) => {
      if (line.kind === "blank") return "";
      const pad = " ".repeat(line.indent);
      return line.kind === "active" ? `${pad}${line.text}` : `${pad}# ${line.text}`;
    }),
    "",
    ...environmentBlock().map((line) => `# ${line}`),
    "",
  ].join("\n");
  return { text, undocumented };
}

/** A complete, commented configuration file that loads as it is. */
export function configExample(): string {
  return renderConfigExample().text;
}
