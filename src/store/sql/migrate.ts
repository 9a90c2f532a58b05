/**
 * Brings a database up to the schema this build expects, and tells a server whether it may
 * serve: a replica must not run against an older schema than its code was written for.
 */
import { type Kysely, Migrator, sql } from "kysely";
import type { Database } from "./database-types.js";
import { SqlFileMigrationProvider } from "./sql-file-migration-provider.js";

export interface MigrationOptions {
  /** Defaults to the package's migrations/ folder; tests point it elsewhere. */
  folder?: URL;
}

async function createMigrator(db: Kysely<Database>, options: MigrationOptions): Promise<Migrator> {
  // Kysely looks for its bookkeeping tables in any schema unless told which one, so a
  // second schema on the same server (another deployment, a test) would fool it. Pin them
  // to the schema this connection's search path resolves to.
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]?.schema;
  if (!schema) throw new Error("no schema on the search path exists; create it before migrating");
  return new Migrator({
    db,
    provider: new SqlFileMigrationProvider(options.folder),
    migrationTableSchema: schema,
  });
}

/** Applies every pending migration, all in one transaction; returns the names applied. */
export async function migrateToLatest(
  db: Kysely<Database>,
  options: MigrationOptions = {},
): Promise<{ applied: string[] }> {
  const migrator = await createMigrator(db, options);
  const { error, results = [] } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results.find((result) => result.status === "Error")?.migrationName;
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(failed ? `migration ${failed} failed: ${reason}` : `migration failed: ${reason}`, {
      cause: error,
    });
  }
  return { applied: results.filter((r) => r.status === "Success").map((r) => r.migrationName) };
}

/** Names of the migrations this build has that the database has not applied, in order. */
export async function pendingMigrations(
  db: Kysely<Database>,
  options: MigrationOptions = {},
): Promise<string[]> {
  const migrator = await createMigrator(db, options);
  const migrations = await migrator.getMigrations();
  return migrations.filter((m) => m.executedAt === undefined).map((m) => m.name);
}

/** Throws, naming what is missing and how to fix it, unless the schema is current. */
export async function assertSchemaCurrent(
  db: Kysely<Database>,
  options: MigrationOptions = {},
): Promise<void> {
  const pending = await pendingMigrations(db, options);
  if (pending.length > 0) {
    throw new Error(
      `the database schema is out of date: ${pending.length} pending migration(s) (${pending.join(", ")}); ` +
        "run `sandpool migrate` first",
    );
  }
}
