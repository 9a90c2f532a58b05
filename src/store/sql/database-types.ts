/**
 * The Kysely view of the tables in migrations/. Column types describe what both drivers
 * hand back: `bigint` columns arrive as a string from pg and as a number from PGlite, so
 * their select type is `string | number` and the repositories convert with Number().
 * jsonb columns are written as JSON text: pg would turn a JS array into a Postgres array
 * literal, so stringifying ourselves is the one encoding both drivers agree on.
 */
import type { ColumnType, Generated } from "kysely";
import type { PolicyFieldName, policyFields } from "../../policy-schema/policy-fields.js";

type BigIntColumn = ColumnType<string | number, number, number>;
type NullableBigIntColumn = ColumnType<string | number | null, number | null, number | null>;
type JsonColumn = ColumnType<unknown, string | null, string | null>;
type CreatedAt = ColumnType<Date, Date | undefined, never>;

/** How each kind of policy field is stored (src/policy-schema/policy-fields.ts names each field's column). */
interface PolicyColumnOfKind {
  switch: Generated<boolean>;
  flag: boolean | null;
  count: number | null;
  bytes: NullableBigIntColumn;
  name: string | null;
  names: string[] | null;
  tools: string[] | null;
  cidrs: string[] | null;
  hosts: string[] | null;
  isolation: string | null;
  limit: number | null;
  idleSeconds: number | null;
}

/** One column per field of the policy table, typed by its kind. */
type PolicyFieldColumns = {
  [F in PolicyFieldName as (typeof policyFields)[F]["column"]]: PolicyColumnOfKind[(typeof policyFields)[F]["kind"]];
};

export interface WorkspacePoliciesTable extends PolicyFieldColumns {
  workspace_id: string;
  version: Generated<number>;
  updated_at: Generated<Date>;
  updated_by: string;
}

export interface PolicyAuditTable {
  id: ColumnType<string | number, never, never>;
  workspace_id: string;
  actor: string;
  at: CreatedAt;
  before: JsonColumn;
  after: JsonColumn;
}

export interface UsageEventsTable {
  event_id: string;
  workspace_id: string;
  session_id: string;
  kind: string;
  tool: string | null;
  quantity: BigIntColumn;
  detail: JsonColumn;
  occurred_at: ColumnType<Date, Date, never>;
  /** How many calls or transfers the row stands for (one for session events). */
  events: ColumnType<number, number | undefined, never>;
  /** On session_created and session_ended: the sandbox that served the session. */
  sandbox_id: ColumnType<string | null, string | null | undefined, never>;
}

/** Call and transfer event ids written (merged rows carry only their first). */
export interface UsageEventIdsTable {
  event_id: string;
  seen_at: ColumnType<Date, Date | undefined, never>;
}

export interface ApiKeysTable {
  key_id: string;
  workspace_id: string;
  hashed_secret: string;
  label: string | null;
  created_at: CreatedAt;
  revoked_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Written in batches by the gateway, so it lags the real last use by up to a flush interval. */
  last_used_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_by: ColumnType<string | null, string | null | undefined, never>;
}

export interface ApiKeyAuditTable {
  id: ColumnType<string | number, never, never>;
  key_id: string;
  workspace_id: string;
  action: "created" | "revoked";
  actor: string;
  at: CreatedAt;
}

/** A pool's sizes as changed at run time; null is "as configured". */
export interface PoolSizesTable {
  pool: string;
  min_idle: number | null;
  max_total: number | null;
  updated_at: Generated<Date>;
  updated_by: string;
}

/** Operators' actions outside workspace policy: a session ended, a pool resized. */
export interface AdminAuditTable {
  id: ColumnType<string | number, never, never>;
  actor: string;
  at: CreatedAt;
  action: string;
  target: string;
  workspace_id: string | null;
  detail: JsonColumn;
}

/** A workspace's named secret: its binding (JSON) and its value, sealed (src/secrets/key-ring.ts). */
export interface WorkspaceSecretsTable {
  workspace_id: string;
  name: string;
  binding: JsonColumn;
  sealed_value: string;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

/** The deployment's egress CA: one row, its key sealed (migration 0017). */
export interface EgressCaTable {
  id: ColumnType<number, number | undefined, never>;
  cert_pem: string;
  sealed_key: string;
  created_at: CreatedAt;
}

export interface Database {
  workspace_policies: WorkspacePoliciesTable;
  policy_audit: PolicyAuditTable;
  usage_events: UsageEventsTable;
  usage_event_ids: UsageEventIdsTable;
  api_keys: ApiKeysTable;
  api_key_audit: ApiKeyAuditTable;
  pool_sizes: PoolSizesTable;
  admin_audit: AdminAuditTable;
  workspace_secrets: WorkspaceSecretsTable;
  egress_ca: EgressCaTable;
}
