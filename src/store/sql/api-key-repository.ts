/**
 * Workspace API keys and their audit trail. A key's row and its audit row commit together.
 * The secret is never here: only its hash, which leaves this module for the authenticator
 * alone (listings never carry it).
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "./database-types.js";

/** A key as operators see it: never its secret nor its hash. */
export interface ApiKeyRow {
  prefix: string;
  workspace: string;
  name: string | null;
  createdAt: string;
  createdBy: string | null;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
}

/** What the authenticator needs to judge a presented key. */
export interface ApiKeyRecord {
  prefix: string;
  workspace: string;
  hashedSecret: string;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

export interface NewApiKeyRow {
  prefix: string;
  workspace: string;
  hashedSecret: string;
  name: string | null;
  expiresAt: Date | null;
}

const iso = (date: Date | null): string | null => (date === null ? null : new Date(date).toISOString());

export class ApiKeyRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async create(key: NewApiKeyRow, actor: string): Promise<ApiKeyRow> {
    return this.db.transaction().execute(async (tx) => {
      const row = await tx
        .insertInto("api_keys")
        .values({
          key_id: key.prefix,
          workspace_id: key.workspace,
          hashed_secret: key.hashedSecret,
          label: key.name,
          expires_at: key.expiresAt,
          created_by: actor,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await tx
        .insertInto("api_key_audit")
        .values({ key_id: key.prefix, workspace_id: key.workspace, action: "created", actor })
        .execute();
      return toRow(row);
    });
  }

  async list(workspace?: string): Promise<ApiKeyRow[]> {
    let query = this.db.selectFrom("api_keys").selectAll().orderBy("created_at").orderBy("key_id");
    if (workspace !== undefined) query = query.where("workspace_id", "=", workspace);
    return (await query.execute()).map(toRow);
  }

  async find(prefix: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.db
      .selectFrom("api_keys")
      .select(["key_id", "workspace_id", "hashed_secret", "expires_at", "revoked_at"])
      .where("key_id", "=", prefix)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return {
      prefix: row.key_id,
      workspace: row.workspace_id,
      hashedSecret: row.hashed_secret,
      expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
      revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at),
    };
  }

  /** Revokes a key (audited once); undefined when no key has this prefix. Revoking twice changes nothing. */
  async revoke(prefix: string, actor: string): Promise<ApiKeyRow | undefined> {
    return this.db.transaction().execute(async (tx) => {
      const revoked = await tx
        .updateTable("api_keys")
        .set({ revoked_at: sql<Date>`now()` })
        .where("key_id", "=", prefix)
        .where("revoked_at", "is", null)
        .returningAll()
        .executeTakeFirst();
      if (revoked === undefined) {
        const existing = await tx
          .selectFrom("api_keys")
          .selectAll()
          .where("key_id", "=", prefix)
          .executeTakeFirst();
        return existing && toRow(existing);
      }
      await tx
        .insertInto("api_key_audit")
        .values({ key_id: prefix, workspace_id: revoked.workspace_id, action: "revoked", actor })
        .execute();
      return toRow(revoked);
    });
  }

  /** Records last uses gathered since the previous flush: one statement per key, whatever the number of calls. */
  async recordLastUse(uses: ReadonlyMap<string, number>): Promise<void> {
    for (const [prefix, at] of uses) {
      await this.db
        .updateTable("api_keys")
        .set({ last_used_at: sql<Date>`greatest(coalesce(last_used_at, ${new Date(at)}), ${new Date(at)})` })
        .where("key_id", "=", prefix)
        .execute();
    }
  }

  async audit(workspace: string): Promise<{ prefix: string; action: string; actor: string; at: string }[]> {
    const rows = await this.db
      .selectFrom("api_key_audit")
      .selectAll()
      .where("workspace_id", "=", workspace)
      .orderBy("id", "desc")
      .limit(1000)
      .execute();
    return rows.map((row) => ({
      prefix: row.key_id,
      action: row.action,
      actor: row.actor,
      at: iso(row.at)!,
    }));
  }
}

function toRow(row: {
  key_id: string;
  workspace_id: string;
  label: string | null;
  created_at: Date;
  created_by: string | null;
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
}): ApiKeyRow {
  return {
    prefix: row.key_id,
    workspace: row.workspace_id,
    name: row.label,
    createdAt: iso(row.created_at)!,
    createdBy: row.created_by,
    lastUsedAt: iso(row.last_used_at),
    expiresAt: iso(row.expires_at),
    revokedAt: iso(row.revoked_at),
  };
}
