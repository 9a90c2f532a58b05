/**
 * The audit trail of operators' actions outside workspace policy (a session ended, a pool
 * resized): who, when, what, on which workspace, with details. Policy edits keep their own
 * trail (policy_audit), written in the same transaction as the edit.
 */
import type { Kysely, Selectable, Transaction } from "kysely";
import type { AdminAuditTable, Database } from "./database-types.js";

export type AdminAction =
  | "session.end"
  | "session.hibernate"
  | "session.resume"
  | "pool.resize"
  | "node.drain"
  | "node.undrain"
  | "secret.set"
  | "secret.remove";

export interface AdminAuditEntry {
  actor: string;
  action: AdminAction;
  /** What was acted on: a session id, a pool name, a secret's name. */
  target: string;
  workspace?: string;
  detail?: Record<string, unknown>;
}

export interface AdminAuditRow extends AdminAuditEntry {
  id: number;
  at: Date;
}

const MAX_ROWS = 1_000;

export class AdminAuditRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** Writes one entry; pass a transaction to commit it with the change it records. */
  async record(
    entry: AdminAuditEntry,
    tx: Kysely<Database> | Transaction<Database> = this.db,
  ): Promise<void> {
    await tx
      .insertInto("admin_audit")
      .values({
        actor: entry.actor,
        action: entry.action,
        target: entry.target,
        workspace_id: entry.workspace ?? null,
        detail: entry.detail === undefined ? null : JSON.stringify(entry.detail),
      })
      .execute();
  }

  /** The most recent entries, newest first, optionally about one target. */
  async list(options: { target?: string; limit?: number } = {}): Promise<AdminAuditRow[]> {
    let query = this.db.selectFrom("admin_audit").selectAll();
    if (options.target !== undefined) query = query.where("target", "=", options.target);
    const rows = await query
      .orderBy("at", "desc")
      .orderBy("id", "desc")
      .limit(Math.min(options.limit ?? 100, MAX_ROWS))
      .execute();
    return rows.map(toRow);
  }
}

function toRow(columns: Selectable<AdminAuditTable>): AdminAuditRow {
  return {
    id: Number(columns.id),
    at: columns.at,
    actor: columns.actor,
    action: columns.action as AdminAction,
    target: columns.target,
    ...(columns.workspace_id === null ? {} : { workspace: columns.workspace_id }),
    ...(columns.detail === null ? {} : { detail: columns.detail as Record<string, unknown> }),
  };
}
