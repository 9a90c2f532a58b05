/**
 * Workspace policy rows and their audit trail. Every write and its audit row commit
 * together or not at all, so the trail never misses an edit nor records one that did not
 * happen.
 */
import { type Kysely, type Selectable, sql, type Transaction } from "kysely";
import { SandpoolError } from "../../contract/error-codes.js";
import { describeIssues } from "../../contract/schemas.js";
import type { Database, PolicyAuditTable } from "./database-types.js";
import { toColumns, toRow, toSnapshot } from "./policy-columns.js";
import {
  type EditablePolicyFields,
  editablePolicyFieldsSchema,
  type PolicyAuditRow,
  type PolicySnapshot,
  type WorkspacePolicyRow,
} from "./policy-row.js";

const editSchema = editablePolicyFieldsSchema.partial();
const MAX_AUDIT_ROWS = 1_000;

export class PolicyRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async get(workspaceId: string): Promise<WorkspacePolicyRow | undefined> {
    const columns = await this.db
      .selectFrom("workspace_policies")
      .selectAll()
      .where("workspace_id", "=", workspaceId)
      .executeTakeFirst();
    return columns && toRow(columns);
  }

  async list(): Promise<WorkspacePolicyRow[]> {
    const rows = await this.db.selectFrom("workspace_policies").selectAll().orderBy("workspace_id").execute();
    return rows.map(toRow);
  }

  /**
   * Creates the row or edits the fields present in `fields` (null clears a narrowing,
   * absent leaves it), bumping the version, and audits the change.
   */
  async put(
    workspaceId: string,
    fields: Partial<EditablePolicyFields>,
    actor: string,
  ): Promise<WorkspacePolicyRow> {
    requireText("workspaceId", workspaceId);
    requireText("actor", actor);
    const parsed = editSchema.safeParse(fields);
    if (!parsed.success) throw new SandpoolError("request.malformed", describeIssues(parsed.error));
    const columns = toColumns(parsed.data);

    return this.db.transaction().execute(async (tx) => {
      let before = await lockRow(tx, workspaceId);
      if (before === undefined) {
        const created = await tx
          .insertInto("workspace_policies")
          .values({ ...columns, workspace_id: workspaceId, updated_by: actor })
          .onConflict((conflict) => conflict.column("workspace_id").doNothing())
          .returningAll()
          .executeTakeFirst();
        if (created) {
          const after = toRow(created);
          await writeAudit(tx, workspaceId, actor, null, after);
          return after;
        }
        // A concurrent put created the row after our read; its insert made ours wait for
        // its commit, so the row is now visible and we edit it like any other.
        before = await lockRow(tx, workspaceId);
        if (before === undefined)
          throw new Error(`policy row for '${workspaceId}' vanished during a concurrent edit`);
      }
      const updated = await tx
        .updateTable("workspace_policies")
        .set((eb) => ({
          ...columns,
          version: eb("version", "+", 1),
          // The database's clock, like the audit row's `at`, so the two agree.
          updated_at: sql<Date>`now()`,
          updated_by: actor,
        }))
        .where("workspace_id", "=", workspaceId)
        .returningAll()
        .executeTakeFirstOrThrow();
      const after = toRow(updated);
      await writeAudit(tx, workspaceId, actor, before, after);
      return after;
    });
  }

  /** Removes the row (the deployment defaults apply again); false when there was none. */
  async delete(workspaceId: string, actor: string): Promise<boolean> {
    requireText("actor", actor);
    return this.db.transaction().execute(async (tx) => {
      const deleted = await tx
        .deleteFrom("workspace_policies")
        .where("workspace_id", "=", workspaceId)
        .returningAll()
        .executeTakeFirst();
      if (deleted === undefined) return false;
      await writeAudit(tx, workspaceId, actor, toRow(deleted), null);
      return true;
    });
  }

  /** The workspace's most recent edits, newest first. */
  async audit(workspaceId: string, limit = 100): Promise<PolicyAuditRow[]> {
    if (!Number.isInteger(limit) || limit < 1)
      throw new SandpoolError("request.malformed", "limit must be >= 1");
    const rows = await this.db
      .selectFrom("policy_audit")
      .selectAll()
      .where("workspace_id", "=", workspaceId)
      .orderBy("at", "desc")
      .orderBy("id", "desc")
      .limit(Math.min(limit, MAX_AUDIT_ROWS))
      .execute();
    return rows.map(toAuditRow);
  }
}

function requireText(name: string, value: string): void {
  if (typeof value !== "string" || value.length === 0) {
    throw new SandpoolError("request.malformed", `${name} must be a non-empty string`);
  }
}

async function lockRow(
  tx: Transaction<Database>,
  workspaceId: string,
): Promise<WorkspacePolicyRow | undefined> {
  const columns = await tx
    .selectFrom("workspace_policies")
    .selectAll()
    .where("workspace_id", "=", workspaceId)
    .forUpdate()
    .executeTakeFirst();
  return columns && toRow(columns);
}

async function writeAudit(
  tx: Transaction<Database>,
  workspaceId: string,
  actor: string,
  before: WorkspacePolicyRow | null,
  after: WorkspacePolicyRow | null,
): Promise<void> {
  await tx
    .insertInto("policy_audit")
    .values({
      workspace_id: workspaceId,
      actor,
      before: before && JSON.stringify(toSnapshot(before)),
      after: after && JSON.stringify(toSnapshot(after)),
    })
    .execute();
}

function toAuditRow(columns: Selectable<PolicyAuditTable>): PolicyAuditRow {
  return {
    id: Number(columns.id),
    workspaceId: columns.workspace_id,
    actor: columns.actor,
    at: columns.at,
    before: columns.before as PolicySnapshot | null,
    after: columns.after as PolicySnapshot | null,
  };
}
