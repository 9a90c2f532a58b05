/**
 * Workspace secrets at rest: a binding (JSON, checked by src/secrets before it gets here) and
 * a sealed value this module neither makes nor opens. Each change and its admin_audit row
 * commit together; the audit row names the secret and its binding, never the sealed value.
 * Listings leave the sealed value out: only `sealedOf`, for the secret store's opening side,
 * reads it.
 */
import { type Kysely, sql } from "kysely";
import { AdminAuditRepository } from "./admin-audit-repository.js";
import type { Database } from "./database-types.js";

/** A stored secret without its value. */
export interface SecretRow {
  workspace: string;
  name: string;
  binding: unknown;
  createdAt: string;
  updatedAt: string;
}

export interface SealedSecretRow {
  name: string;
  binding: unknown;
  sealedValue: string;
}

const ROW_COLUMNS = ["workspace_id", "name", "binding", "created_at", "updated_at"] as const;

export class SecretRepository {
  private readonly audit: AdminAuditRepository;

  constructor(private readonly db: Kysely<Database>) {
    this.audit = new AdminAuditRepository(db);
  }

  /** Creates or replaces a secret (value and binding); `created` says which. */
  async put(
    secret: { workspace: string; name: string; binding: unknown; sealedValue: string },
    actor: string,
  ): Promise<{ row: SecretRow; created: boolean }> {
    return this.db.transaction().execute(async (tx) => {
      const row = await tx
        .insertInto("workspace_secrets")
        .values({
          workspace_id: secret.workspace,
          name: secret.name,
          binding: JSON.stringify(secret.binding),
          sealed_value: secret.sealedValue,
        })
        .onConflict((conflict) =>
          conflict.columns(["workspace_id", "name"]).doUpdateSet({
            binding: (eb) => eb.ref("excluded.binding"),
            sealed_value: (eb) => eb.ref("excluded.sealed_value"),
            updated_at: sql<Date>`now()`,
          }),
        )
        // A row Postgres inserted (rather than updated) has no deleting transaction id.
        .returning([...ROW_COLUMNS, sql<boolean>`(xmax = 0)`.as("inserted")])
        .executeTakeFirstOrThrow();
      const created = row.inserted === true;
      await this.audit.record(
        {
          actor,
          action: "secret.set",
          target: secret.name,
          workspace: secret.workspace,
          detail: { created, binding: secret.binding },
        },
        tx,
      );
      return { row: toRow(row), created };
    });
  }

  /** Replaces the binding of an existing secret, its value kept; undefined when there is none. */
  async rebind(
    secret: { workspace: string; name: string; binding: unknown },
    actor: string,
  ): Promise<SecretRow | undefined> {
    return this.db.transaction().execute(async (tx) => {
      const row = await tx
        .updateTable("workspace_secrets")
        .set({ binding: JSON.stringify(secret.binding), updated_at: sql<Date>`now()` })
        .where("workspace_id", "=", secret.workspace)
        .where("name", "=", secret.name)
        .returning(ROW_COLUMNS)
        .executeTakeFirst();
      if (row === undefined) return undefined;
      await this.audit.record(
        {
          actor,
          action: "secret.set",
          target: secret.name,
          workspace: secret.workspace,
          detail: { created: false, binding: secret.binding, valueKept: true },
        },
        tx,
      );
      return toRow(row);
    });
  }

  async list(workspace: string): Promise<SecretRow[]> {
    const rows = await this.db
      .selectFrom("workspace_secrets")
      .select(ROW_COLUMNS)
      .where("workspace_id", "=", workspace)
      .orderBy("name")
      .execute();
    return rows.map(toRow);
  }

  /** The names of the workspace's secrets among `names` (what exists, for policy files). */
  async existing(workspace: string, names: readonly string[]): Promise<Set<string>> {
    if (names.length === 0) return new Set();
    const rows = await this.db
      .selectFrom("workspace_secrets")
      .select("name")
      .where("workspace_id", "=", workspace)
      .where("name", "in", names)
      .execute();
    return new Set(rows.map((row) => row.name));
  }

  /** Every secret of the workspace with its sealed value: for the store's opening side only. */
  async sealedOf(workspace: string): Promise<SealedSecretRow[]> {
    const rows = await this.db
      .selectFrom("workspace_secrets")
      .select(["name", "binding", "sealed_value"])
      .where("workspace_id", "=", workspace)
      .orderBy("name")
      .execute();
    return rows.map((row) => ({
      name: row.name,
      binding: jsonOf(row.binding),
      sealedValue: row.sealed_value,
    }));
  }

  /** Removes a secret (audited); false when the workspace has none of that name. */
  async remove(workspace: string, name: string, actor: string): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      const removed = await tx
        .deleteFrom("workspace_secrets")
        .where("workspace_id", "=", workspace)
        .where("name", "=", name)
        .returning("name")
        .executeTakeFirst();
      if (removed === undefined) return false;
      await this.audit.record({ actor, action: "secret.remove", target: name, workspace }, tx);
      return true;
    });
  }
}

function toRow(row: {
  workspace_id: string;
  name: string;
  binding: unknown;
  created_at: Date;
  updated_at: Date;
}): SecretRow {
  return {
    workspace: row.workspace_id,
    name: row.name,
    binding: jsonOf(row.binding),
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** pg parses jsonb; a driver that hands back text is read the same way. */
function jsonOf(value: unknown): unknown {
  return typeof value === "string" ? JSON.parse(value) : value;
}
