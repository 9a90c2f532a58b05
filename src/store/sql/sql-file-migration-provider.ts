/**
 * Serves the numbered SQL files of migrations/ to Kysely's Migrator: `0001_initial.sql`
 * becomes the migration `0001_initial`. Each file is one migration, run as one
 * multi-statement query (both drivers accept several statements when a query has no
 * parameters), inside the Migrator's transaction.
 */
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { type Migration, type MigrationProvider, sql } from "kysely";

/** The package's migrations/ folder: src/store/sql and dist/store/sql are both 3 levels down. */
export const defaultMigrationsFolder = new URL("../../../migrations/", import.meta.url);

const MIGRATION_FILE = /^(\d{4})_[a-z0-9_]+\.sql$/;

export class SqlFileMigrationProvider implements MigrationProvider {
  constructor(private readonly folder: URL = defaultMigrationsFolder) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.folder)).filter((name) => name.endsWith(".sql")).sort();
    const migrations: Record<string, Migration> = {};
    const seenNumbers = new Map<string, string>();
    for (const file of files) {
      const number = MIGRATION_FILE.exec(file)?.[1];
      // A misnamed file would otherwise be skipped silently and its schema never applied.
      if (number === undefined) {
        throw new Error(
          `migration file '${file}' in ${fileURLToPath(this.folder)} is not named NNNN_name.sql`,
        );
      }
      const clash = seenNumbers.get(number);
      if (clash !== undefined)
        throw new Error(`migrations '${clash}' and '${file}' share the number ${number}`);
      seenNumbers.set(number, file);
      const text = await readFile(new URL(file, this.folder), "utf8");
      migrations[file.slice(0, -".sql".length)] = {
        up: async (db) => {
          await sql.raw(text).execute(db);
        },
      };
    }
    return migrations;
  }
}
