/**
 * One read over every audit trail (`GET /admin/v1/audit`): refused contract calls (usage
 * events of kind `denied`) and operators' changes (policy edits, API keys created and
 * revoked, sessions ended, pools resized), each as an item of one shape, newest first.
 */
import { type Kysely, type SelectQueryBuilder, sql } from "kysely";
import type { Database } from "./database-types.js";

export const AUDIT_KINDS = ["denied", "admin"] as const;
export type AuditKind = (typeof AUDIT_KINDS)[number];

export interface DeniedItem {
  kind: "denied";
  at: string;
  workspace: string;
  /** The contract operation refused (`sessions.exec`). */
  operation: string;
  code: string;
  status: number | null;
  /** The credential's subject or id (the first refusal's, when several were merged); null when it carried neither. */
  principal: string | null;
  /** The session the call named (the first refusal's, when several were merged); null for CreateSession. */
  sessionId: string | null;
  /** Refusals of the workspace with this operation and code within one second. */
  count: number;
  /** How many distinct session ids they named (counted up to 100). */
  sessions: number;
  /** How many distinct principals made them (counted up to 100). */
  principals: number;
}

export interface AdminItem {
  kind: "admin";
  at: string;
  workspace: string | null;
  actor: string;
  /** `policy.edit`, `key.created`, `key.revoked`, `session.end`, `pool.resize`. */
  action: string;
  /** What was acted on: a workspace, a key prefix, a session id, a pool. */
  target: string;
  detail: Record<string, unknown> | null;
}

export type AuditItem = DeniedItem | AdminItem;

export interface AuditQuery {
  workspace?: string;
  kind?: AuditKind;
  since?: Date;
  until?: Date;
  limit: number;
}

type Json = Record<string, unknown> | null;

export class AuditRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async list(query: AuditQuery): Promise<AuditItem[]> {
    const reads: Promise<AuditItem[]>[] = [];
    if (query.kind !== "admin") reads.push(this.denied(query));
    if (query.kind !== "denied")
      reads.push(this.policyEdits(query), this.keyChanges(query), this.adminActions(query));
    const items = (await Promise.all(reads)).flat();
    // ISO-8601 UTC strings of one format sort as the instants they name.
    items.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
    return items.slice(0, query.limit);
  }

  private async denied(query: AuditQuery): Promise<DeniedItem[]> {
    const select = this.db
      .selectFrom("usage_events")
      .select(["workspace_id", "session_id", "detail", "occurred_at", "events"])
      .where("kind", "=", "denied");
    const rows = await matching(select, "occurred_at", query)
      .orderBy("occurred_at", "desc")
      .limit(query.limit)
      .execute();
    return rows.map((row) => {
      const detail = parseJson(row.detail) ?? {};
      return {
        kind: "denied",
        at: row.occurred_at.toISOString(),
        workspace: row.workspace_id,
        operation: String(detail.operation ?? "unmatched"),
        code: String(detail.code ?? ""),
        status: typeof detail.status === "number" ? detail.status : null,
        principal: typeof detail.principal === "string" ? detail.principal : null,
        sessionId: row.session_id === "-" ? null : row.session_id,
        count: row.events,
        // Rows written before refusals were merged across ids named one session and one principal.
        sessions: distinctCount(detail.sessions, row.session_id === "-" ? 0 : 1),
        principals: distinctCount(detail.principals, detail.principal == null ? 0 : 1),
      };
    });
  }

  private async policyEdits(query: AuditQuery): Promise<AdminItem[]> {
    const select = this.db
      .selectFrom("policy_audit")
      .select(["workspace_id", "actor", "at", "before", "after"]);
    const rows = await newestFirst(select, query);
    return rows.map((row) => ({
      kind: "admin",
      at: row.at.toISOString(),
      workspace: row.workspace_id,
      actor: row.actor,
      action: "policy.edit",
      target: row.workspace_id,
      detail: { before: parseJson(row.before), after: parseJson(row.after) },
    }));
  }

  private async keyChanges(query: AuditQuery): Promise<AdminItem[]> {
    const select = this.db
      .selectFrom("api_key_audit")
      .select(["key_id", "workspace_id", "action", "actor", "at"]);
    const rows = await newestFirst(select, query);
    return rows.map((row) => ({
      kind: "admin",
      at: row.at.toISOString(),
      workspace: row.workspace_id,
      actor: row.actor,
      action: `key.${row.action}`,
      target: row.key_id,
      detail: null,
    }));
  }

  private async adminActions(query: AuditQuery): Promise<AdminItem[]> {
    const select = this.db
      .selectFrom("admin_audit")
      .select(["actor", "at", "action", "target", "workspace_id", "detail"]);
    const rows = await newestFirst(select, query);
    return rows.map((row) => ({
      kind: "admin",
      at: row.at.toISOString(),
      workspace: row.workspace_id,
      actor: row.actor,
      action: row.action,
      target: row.target,
      detail: parseJson(row.detail),
    }));
  }
}

/** The rows of the query's workspace (when it names one) whose `atColumn` lies in its window. */
function matching<TB extends keyof Database, O>(
  select: SelectQueryBuilder<Database, TB, O>,
  atColumn: string,
  query: AuditQuery,
): SelectQueryBuilder<Database, TB, O> {
  let filtered = select;
  if (query.workspace !== undefined)
    filtered = filtered.where(sql<boolean>`${sql.ref("workspace_id")} = ${query.workspace}`);
  if (query.since !== undefined)
    filtered = filtered.where(sql<boolean>`${sql.ref(atColumn)} >= ${query.since}`);
  if (query.until !== undefined)
    filtered = filtered.where(sql<boolean>`${sql.ref(atColumn)} < ${query.until}`);
  return filtered;
}

/** An audit table's rows of the query (their `at` in its window), newest first, at most its limit. */
function newestFirst<TB extends "policy_audit" | "api_key_audit" | "admin_audit", O>(
  select: SelectQueryBuilder<Database, TB, O>,
  query: AuditQuery,
) {
  return matching(select, "at", query)
    .orderBy(sql.ref("at"), "desc")
    .orderBy(sql.ref("id"), "desc")
    .limit(query.limit)
    .execute();
}

function distinctCount(value: unknown, otherwise: number): number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : otherwise;
}

/** jsonb arrives parsed from pg and PGlite alike; text (an older driver) is parsed here. */
function parseJson(value: unknown): Json {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") {
    try {
      return JSON.parse(value) as Json;
    } catch {
      return null;
    }
  }
  return value as Json;
}
