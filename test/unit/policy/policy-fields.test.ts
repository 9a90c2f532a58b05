/**
 * The table of policy fields (src/policy-schema/policy-fields.ts) agrees with everything that names
 * the fields: the columns the migrations create, the flags of `sandpool policy set`, the two
 * schemas, the deployment policy and the effective policy. Every check loops over the table,
 * so a field added to it without its column, flag or ceiling fails here.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { editOf, policyCommand } from "../../../src/cli/commands/policy-command.js";
import { effectiveFields, fieldOfFlag } from "../../../src/cli/commands/policy-render.js";
import { effectivePolicySchema } from "../../../src/operations/admin-schemas/policy-schemas.js";
import { effectivePolicy } from "../../../src/policy/effective-policy.js";
import { deploymentPolicySchema } from "../../../src/policy-schema/deployment-policy.js";
import {
  type PolicyFieldKind,
  type PolicyFieldName,
  type PolicyFieldSpec,
  policyEditSchema,
  policyFieldNames,
  policyFields,
  policyRowSchema,
} from "../../../src/policy-schema/policy-fields.js";
import { deployment } from "./deployment.js";

const spec = (field: string) => policyFields[field as keyof typeof policyFields] as PolicyFieldSpec;
const numeric = (field: string) => ["count", "bytes"].includes(spec(field).kind);

/** workspace_policies' columns and their SQL types, as the migrations in order leave them. */
function migratedColumns(): Map<string, string> {
  const folder = new URL("../../../migrations/", import.meta.url);
  const columns = new Map<string, string>();
  for (const file of readdirSync(folder).sort()) {
    const sql = readFileSync(new URL(file, folder), "utf8").replace(/--.*$/gm, "");
    const created = /create table workspace_policies \(([\s\S]*?)\n\);/i.exec(sql);
    for (const line of created?.[1]?.split(",\n") ?? []) {
      const [column, type] = line.trim().split(/\s+/);
      columns.set(column!, type!.toLowerCase());
    }
    for (const added of sql.matchAll(/alter table workspace_policies add column (\w+) ([\w[\]]+)/gi))
      columns.set(added[1]!, added[2]!.toLowerCase());
    for (const dropped of sql.matchAll(/alter table workspace_policies drop column (\w+)/gi))
      columns.delete(dropped[1]!);
  }
  return columns;
}

/** The SQL type each kind of field is stored in. */
const sqlTypeOf: Record<PolicyFieldKind, string> = {
  switch: "boolean",
  flag: "boolean",
  count: "integer",
  bytes: "bigint",
  name: "text",
  names: "text[]",
  tools: "text[]",
  cidrs: "text[]",
  hosts: "text[]",
  isolation: "text",
  limit: "integer",
  idleSeconds: "integer",
};

/** Settings a workspace alone has, with no deployment value (absent in force when unset). */
const workspaceOwn = (field: PolicyFieldName) =>
  spec(field).kind === "limit" || spec(field).kind === "idleSeconds";
const OWN_SETTINGS = { hibernateAfterIdleSeconds: 60, maxHibernatedSessions: 2 };

function setCommand() {
  return policyCommand().commands.find((command) => command.name() === "set")!;
}

describe("the table of policy fields", () => {
  it("names a column of workspace_policies for every field, of the type its kind is stored in", () => {
    const columns = migratedColumns();
    expect(columns.size).toBeGreaterThan(policyFieldNames.length);
    for (const field of policyFieldNames) {
      const { column, kind } = spec(field);
      expect(columns.get(column), `${field} -> ${column}`).toBe(sqlTypeOf[kind]);
    }
    const bookkeeping = ["workspace_id", "version", "updated_at", "updated_by"];
    const fromTable = policyFieldNames.map((field) => spec(field).column);
    expect([...columns.keys()].filter((column) => !bookkeeping.includes(column)).sort()).toEqual(
      [...fromTable].sort(),
    );
  });

  it("gives every field a distinct column and flag", () => {
    const columns = policyFieldNames.map((field) => spec(field).column);
    const flags = policyFieldNames.map((field) => spec(field).flag);
    expect(new Set(columns).size).toBe(policyFieldNames.length);
    expect(new Set(flags).size).toBe(policyFieldNames.length);
  });

  it("is the shape of both the edit and the stored row, in the table's order", () => {
    expect(Object.keys(policyEditSchema.shape)).toEqual(policyFieldNames);
    expect(Object.keys(policyRowSchema.shape)).toEqual(policyFieldNames);
  });

  it("has one set of bounds: what an edit may hold, the row may store", () => {
    const largestInteger = 2_147_483_647;
    for (const field of policyFieldNames.filter((name) => spec(name).kind === "count")) {
      expect(policyEditSchema.safeParse({ [field]: largestInteger }).success, field).toBe(true);
      expect(policyEditSchema.safeParse({ [field]: largestInteger + 1 }).success, field).toBe(false);
      const row = { ...Object.fromEntries(policyFieldNames.map((name) => [name, null])), enabled: true };
      expect(policyRowSchema.safeParse({ ...row, [field]: largestInteger + 1 }).success, field).toBe(false);
    }
    // The row checks egress entries as the edit does: a row cannot hold what an edit refuses.
    const row = { ...Object.fromEntries(policyFieldNames.map((name) => [name, null])), enabled: true };
    expect(policyRowSchema.safeParse({ ...row, egressAllowCidrs: ["not-a-range"] }).success).toBe(false);
  });

  it("offers a `policy set` flag for every field that takes a value, and `--clear` for every other but enabled", () => {
    const options = new Map(setCommand().options.map((option) => [option.long, option.flags]));
    const own = ["--enable", "--disable", "--clear", "--url", "--token", "--json"];
    const valueFlags = policyFieldNames.filter((field) => spec(field).argument);
    for (const field of valueFlags) {
      const { flag, argument } = spec(field);
      expect(options.get(`--${flag}`), field).toBe(`--${flag} ${argument}`);
    }
    expect([...options.keys()].filter((long) => !own.includes(long!)).sort()).toEqual(
      valueFlags.map((field) => `--${spec(field).flag}`).sort(),
    );
    for (const field of policyFieldNames.filter((name) => name !== "enabled")) {
      const set = setCommand();
      set.parseOptions(["--clear", spec(field).flag]);
      expect(editOf(set.opts()), field).toEqual({ [field]: null });
    }
  });

  it("turns each value flag into its field of the edit", () => {
    const set = setCommand();
    const argv = policyFieldNames
      .filter((field) => spec(field).argument)
      .flatMap((field) => [
        `--${spec(field).flag}`,
        numeric(field) || workspaceOwn(field) ? "7" : spec(field).kind === "flag" ? "false" : "x",
      ]);
    set.parseOptions(argv);
    const edit = editOf(set.opts());
    expect(Object.keys(edit)).toEqual(policyFieldNames.filter((field) => spec(field).argument));
    expect(edit.maxConcurrentSessions).toBe(7);
    expect(edit.allowedImages).toEqual(["x"]);
    expect(edit.defaultImage).toBe("x");
    expect(edit.sandboxReuse).toBe(false);
  });

  it("maps every flag back to its field", () => {
    expect(Object.values(fieldOfFlag)).toEqual(policyFieldNames);
  });

  it("narrows a deployment field for every field but the switch; the rest of the deployment are defaults a ceiling clamps", () => {
    const deploymentFields = Object.keys(deploymentPolicySchema.shape);
    const ceilings = policyFieldNames.flatMap((field) => (spec(field).ceiling ? [spec(field).ceiling] : []));
    const defaults = policyFieldNames.flatMap((field) =>
      spec(field).clampsDefault ? [spec(field).clampsDefault] : [],
    );
    // The switch, and the settings a workspace alone has (no deployment value to narrow).
    expect(policyFieldNames.filter((field) => !spec(field).ceiling)).toEqual([
      "enabled",
      ...policyFieldNames.filter(workspaceOwn),
    ]);
    expect([...ceilings, ...defaults].sort()).toEqual([...deploymentFields].sort());
  });

  it("is in force for every field, and `policy get` shows each", () => {
    const effective = effectivePolicy("ws", deployment(), OWN_SETTINGS);
    for (const field of effectiveFields) expect(effective, field).toHaveProperty(field);
    for (const field of policyFieldNames) expect(effectiveFields).toContain(field);
  });

  it("is the admin API's declared shape of the policy in force", () => {
    const effective = effectivePolicy("ws", deployment(), OWN_SETTINGS);
    expect(Object.keys(effectivePolicySchema.shape).sort()).toEqual(Object.keys(effective).sort());
    // Unset, a workspace's own settings are null in force.
    const unset = effectivePolicy("ws", deployment(), undefined);
    expect(effectivePolicySchema.parse({ ...unset, defaultImage: null })).toMatchObject({
      maxHibernatedSessions: null,
      hibernateAfterIdleSeconds: null,
    });
    expect(effectivePolicySchema.parse({ ...effective, defaultImage: null })).toBeDefined();
  });

  it("clamps each numeric field and the default it names to the row's narrowing", () => {
    const d = deployment();
    for (const field of policyFieldNames.filter(numeric)) {
      const policy = effectivePolicy("ws", d, { [field]: 1 });
      expect(policy[field as keyof typeof policy], field).toBe(1);
      const clamped = spec(field).clampsDefault;
      if (clamped) expect(policy[clamped], clamped).toBe(1);
    }
  });
});
