/**
 * `sandpool migrate`: applies pending SQL migrations to the production database; with
 * --json, an object saying what was pending and what was applied.
 */
import { Command } from "commander";
import { printJson } from "../admin/admin-render.js";

export function migrateCommand(): Command {
  return new Command("migrate")
    .summary("apply pending database migrations")
    .description(
      "Apply the pending migrations in migrations/ to the Postgres database at DATABASE_URL (or\n" +
        "--database-url), all in one transaction. `sandpool serve` refuses to run against an older schema.",
    )
    .option("--database-url <url>", "Postgres connection URL (default: env DATABASE_URL)")
    .option("--dry-run", "only list the migrations that would be applied")
    .option("--json", "print an object: pending (before), applied, dryRun")
    .addHelpText(
      "after",
      "\nExamples:\n  DATABASE_URL=postgres://... sandpool migrate --dry-run\n  sandpool migrate --json\n",
    )
    .action(async (options: { databaseUrl?: string; dryRun?: boolean; json?: boolean }) => {
      const url = options.databaseUrl ?? process.env.DATABASE_URL;
      if (!url) throw new Error("no database: set DATABASE_URL or pass --database-url");
      const { openPostgres } = await import("../../store/sql/open-database.js");
      const { migrateToLatest, pendingMigrations } = await import("../../store/sql/migrate.js");
      const db = openPostgres(url);
      try {
        const pending = await pendingMigrations(db);
        if (options.json) {
          const applied = options.dryRun || pending.length === 0 ? [] : (await migrateToLatest(db)).applied;
          printJson({ pending, applied, dryRun: options.dryRun === true });
        } else if (pending.length === 0) {
          process.stdout.write("The schema is current: nothing to apply.\n");
        } else if (options.dryRun) {
          process.stdout.write(`Pending migrations:\n${pending.map((name) => `  ${name}\n`).join("")}`);
        } else {
          process.stdout.write(`Applying ${pending.length} migration(s)...\n`);
          const { applied } = await migrateToLatest(db);
          for (const name of applied) process.stdout.write(`  applied ${name}\n`);
        }
      } finally {
        await db.destroy();
      }
    });
}
