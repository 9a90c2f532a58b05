/**
 * The one table of a workspace policy row's fields. Everything that names the fields derives
 * from it: the edit schema of the admin API (workspace-policy-fields.ts), the row schema of
 * the repository and its column mapping (src/store/sql/policy-row.ts, policy-columns.ts, and
 * the Kysely table type), the flags of `sandpool policy set` / `--clear` and the order
 * `sandpool policy get` shows the values in (src/cli/commands/policy-render.ts), and the
 * clamping of numbers in the effective policy. Adding a field here (and its column in a
 * migration) adds it everywhere; test/unit/policy/policy-fields.test.ts checks they agree.
 *
 * One set of bounds per kind, the tighter of what the API accepts and what the column holds,
 * so a value the API accepts is always one the database can store.
 */
import { z } from "zod";
import { toolKinds } from "../contract/schemas.js";
import type { DeploymentPolicy } from "./deployment-policy.js";
import { cidrSchema, hostPatternSchema } from "./egress-schemas.js";
import { isolationLevels } from "./isolation-levels.js";

/** The largest value of a Postgres `integer` column. */
const INT4_MAX = 2_147_483_647;
/** The least idle time a workspace may set (`idleSeconds`): what automatic hibernation looks back at least. */
export const MIN_IDLE_SECONDS = 5;
const name = z.string().min(1).max(512);

/** What a field holds, and the bounds that go with it (one schema per kind). */
const valueSchemas = {
  /** The kill switch: a row always has it (true unless disabled), it is never cleared. */
  switch: z.boolean(),
  /** A yes/no narrowing; null is none. */
  flag: z.boolean(),
  /** A positive count in an `integer` column. */
  count: z.number().int().min(1).max(INT4_MAX),
  /** A positive size in a `bigint` column. */
  bytes: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  name,
  names: z.array(name),
  tools: z.array(z.enum(toolKinds)),
  cidrs: z.array(cidrSchema).max(256),
  hosts: z.array(hostPatternSchema).max(256),
  /** A kernel boundary, the least a workspace's sandboxes get. */
  isolation: z.enum(isolationLevels),
  /** A workspace's own bound with no deployment value (absent: none), in an `integer` column. */
  limit: z.number().int().min(1).max(INT4_MAX),
  /** A workspace's own idle time in seconds, 5 or more (absent: never), in an `integer` column. */
  idleSeconds: z.number().int().min(MIN_IDLE_SECONDS).max(INT4_MAX),
} as const;

export type PolicyFieldKind = keyof typeof valueSchemas;

/** Deployment fields that are numbers: what a numeric field can be clamped to. */
type NumericDeploymentField = {
  [K in keyof DeploymentPolicy]: DeploymentPolicy[K] extends number ? K : never;
}[keyof DeploymentPolicy];

export interface PolicyFieldSpec {
  kind: PolicyFieldKind;
  /** Its column in `workspace_policies` (migrations/). */
  column: string;
  /** Its `sandpool policy set` flag (without `--`), also the name `--clear` takes. */
  flag: string;
  /**
   * The flag's value placeholder, when `policy set` takes a value for it; none for the
   * switches (`enabled` has --enable / --disable, `egressAllowed` is only cleared).
   */
  argument?: `<${string}>`;
  /** What it narrows, in a few words: the flag's help. */
  description: string;
  /** The deployment's value it narrows, and for a number the ceiling it is clamped to. */
  ceiling?: keyof DeploymentPolicy;
  /** A deployment default that the ceiling in force clamps too (shown next to it by `policy get`). */
  clampsDefault?: NumericDeploymentField;
}

/** The fields, in the order they are validated, stored, listed and shown. */
export const policyFields = {
  enabled: {
    kind: "switch",
    column: "enabled",
    flag: "enabled",
    description: "whether the workspace may create sessions (the kill switch)",
  },
  allowedImages: {
    kind: "names",
    column: "allowed_images",
    flag: "allowed-images",
    argument: "<list>",
    description: "comma-separated images sessions may use",
    ceiling: "allowedImages",
  },
  defaultImage: {
    kind: "name",
    column: "default_image",
    flag: "default-image",
    argument: "<image>",
    description: "image of a session that names none",
    ceiling: "defaultImage",
  },
  allowedTools: {
    kind: "tools",
    column: "allowed_tools",
    flag: "allowed-tools",
    argument: "<list>",
    description: "comma-separated tools (code_execution,bash_code_execution,...)",
    ceiling: "allowedTools",
  },
  execTimeoutCeilingSeconds: {
    kind: "count",
    column: "exec_timeout_ceiling_s",
    flag: "exec-timeout-ceiling",
    argument: "<s>",
    description: "ceiling of a call's timeout_seconds",
    ceiling: "execTimeoutCeilingSeconds",
    clampsDefault: "defaultExecTimeoutSeconds",
  },
  idleTimeoutCeilingSeconds: {
    kind: "count",
    column: "idle_timeout_ceiling_s",
    flag: "idle-timeout-ceiling",
    argument: "<s>",
    description: "ceiling of a session's idle timeout",
    ceiling: "idleTimeoutCeilingSeconds",
    clampsDefault: "defaultIdleTimeoutSeconds",
  },
  maxLifetimeCeilingSeconds: {
    kind: "count",
    column: "max_lifetime_ceiling_s",
    flag: "max-lifetime-ceiling",
    argument: "<s>",
    description: "ceiling of a session's lifetime",
    ceiling: "maxLifetimeCeilingSeconds",
    clampsDefault: "defaultMaxLifetimeSeconds",
  },
  maxConcurrentSessions: {
    kind: "count",
    column: "max_concurrent_sessions",
    flag: "max-concurrent-sessions",
    argument: "<n>",
    description: "sessions open at once",
    ceiling: "maxConcurrentSessions",
  },
  sessionsPerMinute: {
    kind: "count",
    column: "sessions_per_minute",
    flag: "sessions-per-minute",
    argument: "<n>",
    description: "sessions created per minute",
    ceiling: "sessionsPerMinute",
  },
  execSecondsPerDay: {
    kind: "count",
    column: "exec_seconds_per_day",
    flag: "exec-seconds-per-day",
    argument: "<n>",
    description: "execution seconds per UTC day",
    ceiling: "execSecondsPerDay",
  },
  maxFileBytes: {
    kind: "bytes",
    column: "max_file_bytes",
    flag: "max-file-bytes",
    argument: "<n>",
    description: "largest file a session may upload or download",
    ceiling: "maxFileBytes",
  },
  resourceClass: {
    kind: "name",
    column: "resource_class",
    flag: "resource-class",
    argument: "<class>",
    description: "resource class (a pool must serve it)",
    ceiling: "resourceClass",
  },
  isolation: {
    kind: "isolation",
    column: "isolation",
    flag: "isolation",
    argument: "<container|gvisor>",
    description:
      "the least isolation its sandboxes get: gvisor for a gVisor kernel boundary (never below the deployment's)",
    ceiling: "isolation",
  },
  egressAllowed: {
    kind: "flag",
    column: "egress_allowed",
    flag: "egress-allowed",
    description: "whether sessions may reach the network at all (only where the deployment allows it)",
    ceiling: "egressAllowed",
  },
  egressAllowCidrs: {
    kind: "cidrs",
    column: "egress_allow_cidrs",
    flag: "egress-allow-cidrs",
    argument: "<list>",
    description:
      "comma-separated CIDR ranges egress may reach although denied by default (within the deployment's)",
    ceiling: "egressAllowCidrs",
  },
  egressAllowHosts: {
    kind: "hosts",
    column: "egress_allow_hosts",
    flag: "egress-allow-hosts",
    argument: "<list>",
    description:
      "comma-separated host names egress is limited to, exact or *.suffix (within the deployment's)",
    ceiling: "egressAllowHosts",
  },
  sandboxReuse: {
    kind: "flag",
    column: "sandbox_reuse",
    flag: "sandbox-reuse",
    argument: "<true|false>",
    description:
      "false: every session gets a fresh container, never a scrubbed sandbox of an earlier session of the workspace",
    ceiling: "sandboxReuse",
  },
  hibernateAfterIdleSeconds: {
    kind: "idleSeconds",
    column: "hibernate_after_idle_s",
    flag: "hibernate-after-idle",
    argument: "<s>",
    description:
      "hibernate a session idle this long (5 or more; absent: never): its sandbox saved and removed, its next call resumes it",
  },
  maxHibernatedSessions: {
    kind: "limit",
    column: "max_hibernated_sessions",
    flag: "max-hibernated-sessions",
    argument: "<n>",
    description: "hibernated sessions (checkpoints) the workspace may keep at once (absent: no bound)",
  },
} as const satisfies Record<string, PolicyFieldSpec>;

type Fields = typeof policyFields;
export type PolicyFieldName = keyof Fields;
export type PolicyColumn = Fields[PolicyFieldName]["column"];

export const policyFieldNames = Object.keys(policyFields) as PolicyFieldName[];

/** The numeric fields: each is clamped to the deployment's value of the same meaning. */
export type CeilingField = {
  [F in PolicyFieldName]: Fields[F]["kind"] extends "count" | "bytes" ? F : never;
}[PolicyFieldName];

const isNumeric = (field: PolicyFieldName): field is CeilingField =>
  policyFields[field].kind === "count" || policyFields[field].kind === "bytes";

export const ceilingFields: readonly CeilingField[] = policyFieldNames.filter(isNumeric);

/** The deployment value a numeric field is clamped to. */
export const ceilingOf = (field: CeilingField): NumericDeploymentField => policyFields[field].ceiling;

/** The deployment defaults that a ceiling in force clamps (`clampsDefault`). */
export type ClampedDefault = {
  [F in PolicyFieldName]: Fields[F] extends { clampsDefault: infer D } ? D : never;
}[PolicyFieldName];

export const clampedDefaultOf = (field: PolicyFieldName): ClampedDefault | undefined =>
  (policyFields[field] as { clampsDefault?: ClampedDefault }).clampsDefault;

/** The fields of the policy in force, in the order shown: each field, then a default its ceiling clamps. */
export const effectiveFieldNames: readonly (PolicyFieldName | ClampedDefault)[] = policyFieldNames.flatMap(
  (field) => {
    const clamped = clampedDefaultOf(field);
    return clamped ? [field, clamped] : [field];
  },
);

type ValueSchema<F extends PolicyFieldName> = (typeof valueSchemas)[Fields[F]["kind"]];

/** A stored row's fields: every one present, null when it narrows nothing (the switch never is). */
type RowShape = {
  [F in PolicyFieldName]: Fields[F]["kind"] extends "switch" ? ValueSchema<F> : z.ZodNullable<ValueSchema<F>>;
};

/** An edit's fields: each may be left out (unchanged); null clears a narrowing (not the switch). */
type EditShape = {
  [F in PolicyFieldName]: Fields[F]["kind"] extends "switch"
    ? z.ZodOptional<ValueSchema<F>>
    : z.ZodOptional<z.ZodNullable<ValueSchema<F>>>;
};

function shape<S>(wrap: (value: z.ZodType, kind: PolicyFieldKind) => z.ZodType): S {
  return Object.fromEntries(
    policyFieldNames.map((field) => {
      const { kind } = policyFields[field];
      return [field, wrap(valueSchemas[kind], kind)];
    }),
  ) as S;
}

/** The shape of a stored row's fields (the repository's check on writes). */
export const policyRowSchema = z.strictObject(
  shape<RowShape>((value, kind) => (kind === "switch" ? value : value.nullable())),
);

/** The shape of an edit (the admin API's body, an entry of a policy set). */
export const policyEditSchema = z.strictObject(
  shape<EditShape>((value, kind) => (kind === "switch" ? value.optional() : value.nullish())),
);

/** Every field narrowing nothing: what a policy set's absent fields mean. */
export const noNarrowing = Object.fromEntries(
  policyFieldNames.map((field) => [field, policyFields[field].kind === "switch" ? true : null]),
) as z.output<typeof policyRowSchema>;
