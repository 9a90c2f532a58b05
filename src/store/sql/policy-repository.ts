/**
 * Workspace policy rows and their audit trail. Every write and its audit row commit
 * together or not at all, so the trail never misses an edit nor records one that did not
 * happen.
 */
import { type Kysely, type Selectable, sql, type Transaction } from "kysely";
import { malformed, SandpoolError } from "../../contract/error-codes.js";
import { issueProblems } from "../../contract/schemas.js";
import { policyFieldNames } from "../../policy-schema/policy-fields.js";
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
    if (!parsed.success) throw malformed(issueProblems(parsed.error));
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

  /**
   * Makes the rows exactly `desired` (policy as code): a workspace in it gets a row with those
   * fields, a row of a workspace not in it is deleted. One transaction with every row locked,
   * so the set is applied whole or not at all and the diff is against what was in force at
   * that moment. A row already equal is left alone (no version bump, no audit row), so a
   * second apply changes nothing. With `dryRun` nothing is written.
   */
  async applySet(
    desired: ReadonlyMap<string, EditablePolicyFields>,
    actor: string,
    dryRun: boolean,
  ): Promise<PolicySetChange[]> {
    requireText("actor", actor);
    for (const [workspaceId, fields] of desired) {
      requireText("workspaceId", workspaceId);
      const parsed = editablePolicyFieldsSchema.safeParse(fields);
      if (!parsed.success)
        throw malformed(issueProblems(parsed.error).map((problem) => `${workspaceId}: ${problem}`));
    }
    const changes: PolicySetChange[] = [];
    const apply = async (tx: Transaction<Database>) => {
      // The set is the whole truth: a row created meanwhile by a single edit must wait, not
      // survive the apply or make it fail on a duplicate key (FOR UPDATE locks existing rows only).
      await sql`lock table workspace_policies in share row exclusive mode`.execute(tx);
      const current = new Map(
        (await tx.selectFrom("workspace_policies").selectAll().orderBy("workspace_id").forUpdate().execute())
          .map(toRow)
          .map((row) => [row.workspaceId, row]),
      );
      const workspaces = [...new Set([...current.keys(), ...desired.keys()])].sort();
      for (const workspaceId of workspaces) {
        const before = current.get(workspaceId);
        const fields = desired.get(workspaceId);
        if (fields === undefined) {
          changes.push({ workspace: workspaceId, action: "delete", before: before!, after: null });
          if (dryRun) continue;
          await tx.deleteFrom("workspace_policies").where("workspace_id", "=", workspaceId).execute();
          await writeAudit(tx, workspaceId, actor, before!, null);
          continue;
        }
        if (before === undefined) {
          changes.push({ workspace: workspaceId, action: "create", before: null, after: fields });
          if (dryRun) continue;
          const created = await tx
            .insertInto("workspace_policies")
            .values({ ...toColumns(fields), workspace_id: workspaceId, updated_by: actor })
            .returningAll()
            .executeTakeFirstOrThrow();
          await writeAudit(tx, workspaceId, actor, null, toRow(created));
          continue;
        }
        if (sameFields(before, fields)) {
          changes.push({ workspace: workspaceId, action: "unchanged", before, after: fields });
          continue;
        }
        changes.push({ workspace: workspaceId, action: "update", before, after: fields });
        if (dryRun) continue;
        const updated = await tx
          .updateTable("workspace_policies")
          .set((eb) => ({
            ...toColumns(fields),
            version: eb("version", "+", 1),
            updated_at: sql<Date>`now()`,
            updated_by: actor,
          }))
          .where("workspace_id", "=", workspaceId)
          .returningAll()
          .executeTakeFirstOrThrow();
        await writeAudit(tx, workspaceId, actor, before, toRow(updated));
      }
    };
    await this.db.transaction().execute(apply);
    return changes;
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

/** One workspace in a policy set applied: what it was, what it becomes. */
export interface PolicySetChange {
  workspace: string;
  action: "create" | "update" | "delete" | "unchanged";
  before: WorkspacePolicyRow | null;
  after: EditablePolicyFields | null;
}

/** Whether a row already holds exactly these fields (lists compared in order). */
export function sameFields(row: WorkspacePolicyRow, fields: EditablePolicyFields): boolean {
  return policyFieldNames.every(
    (field) => JSON.stringify(row[field] ?? null) === JSON.stringify(fields[field] ?? null),
  );
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
