/**
 * The editable fields of a workspace's policy row, as the policy editor shows them: what kind
 * of value each takes, how a form's text becomes that value (or a problem shown next to the
 * field), the diff an edit makes to the row, and which field each of the API's problems is
 * about. No DOM here, so unit tests run it in Node.
 */
import type { PolicyEdit, PolicyView } from "./api.js";

export type FieldKind = "flag" | "maybe-flag" | "whole" | "text" | "list" | "isolation" | "tools";

export const TOOLS = ["code_execution", "bash_code_execution", "text_editor_code_execution"] as const;

export const POLICY_FIELDS: readonly { name: keyof PolicyEdit & string; kind: FieldKind; help: string }[] = [
  {
    name: "enabled",
    kind: "flag",
    help: "false refuses every call of the workspace (policy.workspace_disabled)",
  },
  { name: "allowedImages", kind: "list", help: "images it may ask for, comma-separated" },
  { name: "defaultImage", kind: "text", help: "the image of a session that names none" },
  { name: "allowedTools", kind: "tools", help: TOOLS.join(", ") },
  { name: "execTimeoutCeilingSeconds", kind: "whole", help: "longest Execute, seconds" },
  { name: "idleTimeoutCeilingSeconds", kind: "whole", help: "longest idle timeout, seconds" },
  { name: "maxLifetimeCeilingSeconds", kind: "whole", help: "longest session lifetime, seconds" },
  { name: "maxConcurrentSessions", kind: "whole", help: "sessions at once" },
  { name: "sessionsPerMinute", kind: "whole", help: "new sessions per minute" },
  { name: "execSecondsPerDay", kind: "whole", help: "CPU-seconds per UTC day" },
  { name: "maxFileBytes", kind: "whole", help: "largest file upload, bytes" },
  { name: "resourceClass", kind: "text", help: "the resource class of its sandboxes" },
  { name: "isolation", kind: "isolation", help: "container or gvisor" },
  { name: "egressAllowed", kind: "maybe-flag", help: "may its sandboxes reach the network" },
  { name: "egressAllowCidrs", kind: "list", help: "address ranges it may reach, comma-separated" },
  { name: "egressAllowHosts", kind: "list", help: "host names it may reach, comma-separated" },
  { name: "sandboxReuse", kind: "maybe-flag", help: "may a scrubbed sandbox serve its next session" },
  { name: "hibernateAfterIdleSeconds", kind: "whole", help: "hibernate a session idle this long" },
  { name: "maxHibernatedSessions", kind: "whole", help: "hibernated sessions at once" },
];

export type FieldName = (typeof POLICY_FIELDS)[number]["name"];
type Row = NonNullable<PolicyView["row"]>;

/** A field's value as the form shows it: empty for none (the deployment's value applies). */
export function fieldText(row: PolicyView["row"], name: FieldName): string {
  if (!row) return name === "enabled" ? "true" : "";
  const value = row[name as keyof Row];
  if (value === null || value === undefined) return "";
  return Array.isArray(value) ? value.join(", ") : String(value);
}

/** The form's text as the field's value (null: unset), or a problem to show next to it. */
export function parseField(
  kind: FieldKind,
  text: string,
): { value: PolicyEdit[keyof PolicyEdit] } | { problem: string } {
  const trimmed = text.trim();
  if (kind === "flag") {
    if (trimmed === "true" || trimmed === "false") return { value: trimmed === "true" };
    return { problem: "true or false" };
  }
  if (trimmed === "") return { value: null };
  switch (kind) {
    case "maybe-flag":
      if (trimmed === "true" || trimmed === "false") return { value: trimmed === "true" };
      return { problem: "true, false, or empty for the deployment's" };
    case "whole":
      if (!/^\d+$/.test(trimmed)) return { problem: "a whole number, or empty for the deployment's" };
      return { value: Number(trimmed) };
    case "isolation":
      if (trimmed === "container" || trimmed === "gvisor") return { value: trimmed };
      return { problem: "container or gvisor, or empty for the deployment's" };
    case "list":
    case "tools": {
      const items = trimmed
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item !== "");
      if (kind === "tools") {
        const unknown = items.filter((item) => !(TOOLS as readonly string[]).includes(item));
        if (unknown.length > 0)
          return { problem: `unknown tool ${unknown.join(", ")} (one of ${TOOLS.join(", ")})` };
      }
      return { value: items };
    }
    default:
      return { value: trimmed };
  }
}

export interface FieldChange {
  name: FieldName;
  before: string;
  after: string;
}

/**
 * What the form's texts change in the row, and the edit to send (only those fields: the API
 * leaves absent ones as they are), or the problems by field.
 */
export function policyEdit(
  row: PolicyView["row"],
  texts: Partial<Record<FieldName, string>>,
): { edit: PolicyEdit; changes: FieldChange[] } | { problems: Map<FieldName, string> } {
  const edit: Record<string, unknown> = {};
  const changes: FieldChange[] = [];
  const problems = new Map<FieldName, string>();
  for (const field of POLICY_FIELDS) {
    const text = texts[field.name];
    if (text === undefined) continue;
    const parsed = parseField(field.kind, text);
    if ("problem" in parsed) {
      problems.set(field.name, parsed.problem);
      continue;
    }
    const before = fieldText(row, field.name);
    const after =
      parsed.value === null
        ? ""
        : Array.isArray(parsed.value)
          ? parsed.value.join(", ")
          : String(parsed.value);
    if (before === after) continue;
    edit[field.name] = parsed.value;
    changes.push({ name: field.name, before, after });
  }
  if (problems.size > 0) return { problems };
  return { edit: edit as PolicyEdit, changes };
}

/** The API's problems (`field: reason`, `field[1]: reason`) by field; the rest under "". */
export function problemsByField(problems: readonly string[]): Map<FieldName | "", string[]> {
  const byField = new Map<FieldName | "", string[]>();
  const names = new Set<string>(POLICY_FIELDS.map((field) => field.name));
  for (const problem of problems) {
    const name = /^([A-Za-z]+)/.exec(problem)?.[1] ?? "";
    const key = (names.has(name) ? name : "") as FieldName | "";
    byField.set(key, [...(byField.get(key) ?? []), problem]);
  }
  return byField;
}

/** Where a value in force comes from: the deployment's default, the workspace's row, or the deployment's ceiling over the row. */
export function sourceOf(view: PolicyView, name: string): "deployment" | "workspace" | "ceiling" {
  const source = view.sources[name];
  if (source === "workspace") return "workspace";
  const rowValue = view.row ? (view.row as Record<string, unknown>)[name] : null;
  return rowValue !== null && rowValue !== undefined ? "ceiling" : "deployment";
}
