/**
 * The database flavours every store test runs against: the real Postgres server of this
 * run (a fresh schema per test file, dropped afterwards), an in-memory PGlite, and an
 * in-memory PGlite in a process of its own (what dev mode runs).
 *
 * Postgres is found at SANDPOOL_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test).
 * Unreachable under CI=true, the suite fails; unreachable locally, the Postgres flavour is
 * skipped with a loud warning (test/support/require-service.ts) and PGlite still runs.
 */
import { randomBytes } from "node:crypto";
import { PGlite } from "@electric-sql/pglite";
import { Kysely } from "kysely";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import type { Database } from "../../../src/store/sql/database-types.js";
import { migrateToLatest } from "../../../src/store/sql/migrate.js";
import { openPostgres, type PostgresOptions } from "../../../src/store/sql/open-database.js";
import { PgliteDialect } from "../../../src/store/sql/pglite-dialect.js";
import { requireService } from "../../support/require-service.js";
import { openPgliteProcessFromTemplate, pgliteTemplate } from "./pglite-template.js";

export const postgresUrl =
  process.env.SANDPOOL_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export interface OpenedDatabase {
  db: Kysely<Database>;
  close(): Promise<void>;
}

export interface DatabaseFlavour {
  name: "postgres" | "pglite" | "pglite-process";
  open(): Promise<OpenedDatabase>;
}

async function withAdminClient<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** Postgres answers `select 1` (a failure's message is what the gate reports). */
async function postgresAnswers(): Promise<boolean> {
  await withAdminClient((client) => client.query("select 1"));
  return true;
}

/** A fresh schema on the run's Postgres server, dropped with everything in it on close. */
export async function openFreshPostgres(
  options: Omit<PostgresOptions, "schema"> = {},
): Promise<OpenedDatabase> {
  const schema = `test_${randomBytes(6).toString("hex")}`;
  await withAdminClient((client) => client.query(`create schema "${schema}"`));
  const db = openPostgres(postgresUrl, { ...options, schema });
  return {
    db,
    async close() {
      try {
        await db.destroy();
      } finally {
        await withAdminClient((client) => client.query(`drop schema "${schema}" cascade`));
      }
    },
  };
}

/** In memory, booted from a dump of an empty cluster (see pglite-template.ts). */
export async function openFreshPglite(): Promise<OpenedDatabase> {
  const pglite = await PGlite.create({ loadDataDir: await pgliteTemplate() });
  const db = new Kysely<Database>({ dialect: new PgliteDialect(pglite) });
  return { db, close: () => db.destroy() };
}

/** The same, in a process of its own, as `sandpool dev` runs it. */
export async function openFreshPgliteProcess(): Promise<OpenedDatabase> {
  const db = new Kysely<Database>({ dialect: new PgliteDialect(await openPgliteProcessFromTemplate()) });
  return { db, close: () => db.destroy() };
}

export const postgresAvailable = await requireService(`Postgres at ${postgresUrl}`, postgresAnswers, {
  start: "the Postgres step of .ci/run (or set SANDPOOL_TEST_DATABASE_URL)",
});

export const databaseFlavours: DatabaseFlavour[] = [
  ...(postgresAvailable ? [{ name: "postgres" as const, open: () => openFreshPostgres() }] : []),
  { name: "pglite", open: openFreshPglite },
  { name: "pglite-process", open: openFreshPgliteProcess },
];

/**
 * Opens a fresh database of `flavour` for the enclosing describe block (migrated unless
 * told otherwise) and closes it afterwards.
 */
export function useDatabase(
  flavour: DatabaseFlavour,
  options: { migrated?: boolean } = {},
): { readonly db: Kysely<Database> } {
  let opened: OpenedDatabase | undefined;
  beforeAll(async () => {
    opened = await flavour.open();
    if (options.migrated ?? true) await migrateToLatest(opened.db);
  });
  afterAll(async () => {
    await opened?.close();
  });
  return {
    get db() {
      if (opened === undefined) throw new Error("the database is opened in beforeAll");
      return opened.db;
    },
  };
}

let counter = 0;
/** A workspace id no other test in the run uses. */
export function uniqueId(prefix = "ws"): string {
  counter += 1;
  return `${prefix}-${randomBytes(4).toString("hex")}-${counter}`;
}
