import { copyFile, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertSchemaCurrent, migrateToLatest, pendingMigrations } from "../../../src/store/sql/migrate.js";
import {
  defaultMigrationsFolder,
  SqlFileMigrationProvider,
} from "../../../src/store/sql/sql-file-migration-provider.js";
import { databaseFlavours, useDatabase } from "./databases.js";

async function shippedMigrations(): Promise<string[]> {
  const files = await readdir(defaultMigrationsFolder);
  return files
    .filter((f) => f.endsWith(".sql"))
    .map((f) => f.slice(0, -4))
    .sort();
}

async function folderWith(files: Record<string, string>): Promise<URL> {
  const dir = await mkdtemp(join(tmpdir(), "sandpool-migrations-"));
  for (const shipped of await readdir(defaultMigrationsFolder)) {
    await copyFile(new URL(shipped, defaultMigrationsFolder), join(dir, shipped));
  }
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return pathToFileURL(`${dir}/`);
}

const folders: URL[] = [];
afterAll(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

describe.each(databaseFlavours)("migrations on $name", (flavour) => {
  const handle = useDatabase(flavour, { migrated: false });
  let shipped: string[];
  beforeAll(async () => {
    shipped = await shippedMigrations();
  });

  // This test's schema only: other suites' schemas on the same server are none of its business.
  const tableNames = async () => {
    const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(handle.db);
    return (await handle.db.introspection.getTables())
      .filter((table) => table.schema === rows[0]!.schema)
      .map((table) => table.name)
      .sort();
  };

  it("lists every shipped migration as pending on an empty schema and refuses to serve", async () => {
    expect(shipped[0]).toBe("0001_initial");
    expect(await pendingMigrations(handle.db)).toEqual(shipped);
    const refusal = assertSchemaCurrent(handle.db);
    await expect(refusal).rejects.toThrow(/0001_initial/);
    await expect(refusal).rejects.toThrow(/sandpool migrate/);
  });

  it("applies them from scratch", async () => {
    expect(await migrateToLatest(handle.db)).toEqual({ applied: shipped });
    expect(await tableNames()).toEqual([
      "admin_audit",
      "api_key_audit",
      "api_keys",
      "egress_ca",
      "policy_audit",
      "pool_sizes",
      "usage_daily",
      "usage_event_ids",
      "usage_events",
      "usage_rollup_state",
      "workspace_policies",
      "workspace_secrets",
    ]);
    expect(await pendingMigrations(handle.db)).toEqual([]);
    await expect(assertSchemaCurrent(handle.db)).resolves.toBeUndefined();
  });

  it("is idempotent: a second run applies nothing", async () => {
    expect(await migrateToLatest(handle.db)).toEqual({ applied: [] });
  });

  it("detects a schema older than the code and runs multi-statement files", async () => {
    const folder = await folderWith({
      "0900_extra.sql": `
        create table extra (id int primary key, note text);
        -- a semicolon inside a dollar-quoted body must not split the file
        do $$ begin insert into extra values (1, 'a; b'); end $$;
        insert into extra values (2, 'c');
      `,
    });
    folders.push(folder);
    expect(await pendingMigrations(handle.db, { folder })).toEqual(["0900_extra"]);
    await expect(assertSchemaCurrent(handle.db, { folder })).rejects.toThrow(/0900_extra/);
    expect(await migrateToLatest(handle.db, { folder })).toEqual({ applied: ["0900_extra"] });
    const { rows } = await sql<{ note: string }>`select note from extra order by id`.execute(handle.db);
    expect(rows.map((row) => row.note)).toEqual(["a; b", "c"]);
  });

  it("rolls a failing migration back whole and names it", async () => {
    const folder = await folderWith({
      "0900_extra.sql": "create table extra (id int primary key, note text);",
      "0901_broken.sql": "create table half_done (x int);\nselect no_such_column from extra;",
    });
    folders.push(folder);
    await expect(migrateToLatest(handle.db, { folder })).rejects.toThrow(/0901_broken/);
    expect(await tableNames()).not.toContain("half_done");
    expect(await pendingMigrations(handle.db, { folder })).toEqual(["0901_broken"]);
  });
});

describe("SqlFileMigrationProvider", () => {
  it("refuses a misnamed .sql file rather than skipping it", async () => {
    const folder = await folderWith({ "2_oops.sql": "select 1;" });
    folders.push(folder);
    await expect(new SqlFileMigrationProvider(folder).getMigrations()).rejects.toThrow(/2_oops\.sql/);
  });

  it("refuses two files with the same number", async () => {
    const folder = await folderWith({ "0001_again.sql": "select 1;" });
    folders.push(folder);
    await expect(new SqlFileMigrationProvider(folder).getMigrations()).rejects.toThrow(
      /share the number 0001/,
    );
  });

  it("ignores files that are not SQL", async () => {
    const folder = await folderWith({ "README.md": "notes" });
    folders.push(folder);
    expect(Object.keys(await new SqlFileMigrationProvider(folder).getMigrations())).toEqual(
      await shippedMigrations(),
    );
  });
});
