/**
 * Opens the policy-and-usage database: real Postgres for `sandpool serve`, PGlite (the same
 * migrations, in process) for `sandpool dev` and tests. Both give the same Kysely type;
 * `db.destroy()` closes either.
 */
import { CompiledQuery, Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import type { Database } from "./database-types.js";
import { PgliteDialect } from "./pglite-dialect.js";
import { PgliteProcess } from "./pglite-process.js";

export interface PostgresOptions {
  /** Schema to put first on the search path (tests use a fresh one per file). */
  schema?: string;
  /** Per-statement limit; `sandpool migrate` may want longer than the request path does. */
  statementTimeoutMs?: number;
  maxConnections?: number;
}

// Only plain identifiers, so the schema can be quoted into SET without escaping games.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function openPostgres(url: string, options: PostgresOptions = {}): Kysely<Database> {
  const { schema } = options;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new Error(`invalid schema name '${schema}': use lower-case letters, digits and _`);
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.maxConnections ?? 5,
    // Fail fast rather than queue requests behind a database that is not answering.
    connectionTimeoutMillis: 3_000,
    statement_timeout: options.statementTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    application_name: "sandpool",
  });
  // An idle client losing its server emits 'error' on the pool; unhandled, that would kill
  // the process. The next query on a fresh client reports the outage instead.
  pool.on("error", () => {});
  // A client checked out (between the queries of a transaction, or in one) that loses its
  // server emits 'error' on itself, and the pool listens only to idle ones: unheard, it
  // killed the gateway when Postgres went away under load (usage-postgres-away.test.ts in
  // CI). Its queries fail on their own, and the pool drops the broken client.
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  return new Kysely<Database>({
    dialect: new PostgresDialect({
      pool,
      // Set per connection rather than through the URL's `options`, which the URL would
      // silently override.
      onCreateConnection: schema
        ? async (connection) => {
            await connection.executeQuery(CompiledQuery.raw(`set search_path to "${schema}"`));
          }
        : undefined,
    }),
  });
}

/**
 * In memory when `dataDir` is undefined; otherwise the data survives restarts there. The
 * database runs in a child process of its own (see pglite-host.mjs for why).
 */
export async function openPglite(dataDir: string | undefined): Promise<Kysely<Database>> {
  const pglite = await PgliteProcess.open({ dataDir });
  return new Kysely<Database>({ dialect: new PgliteDialect(pglite) });
}
