/**
 * A Kysely dialect over an in-process PGlite, on this thread or in a process of its
 * own (pglite-process.ts). PGlite is one Postgres session, so the driver
 * hands out its single connection to one holder at a time: a transaction then owns the
 * session until it commits, exactly as a pooled pg connection would.
 *
 * Queries without parameters go through `exec` (the simple query protocol), like pg does
 * for them, so a multi-statement migration file runs the same way on both drivers.
 */
import {
  AbortedTransactionError,
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from "kysely";

const ROW_COUNT_COMMANDS = new Set(["INSERT", "UPDATE", "DELETE", "MERGE"]);

export interface PgliteResult {
  rows: unknown[];
  command?: string;
  rowCount?: number;
}

/** The part of PGlite's API the dialect uses: a PGlite, or a PgliteProcess. */
export interface PgliteSession {
  readonly waitReady: Promise<void>;
  readonly closed: boolean;
  query(sql: string, params?: unknown[]): Promise<PgliteResult>;
  exec(sql: string): Promise<PgliteResult[]>;
  close(): Promise<void>;
}

class PgliteConnection implements DatabaseConnection {
  constructor(private readonly pglite: PgliteSession) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const result: PgliteResult | undefined =
      compiled.parameters.length === 0
        ? (await this.pglite.exec(compiled.sql)).at(-1)
        : await this.pglite.query(compiled.sql, [...compiled.parameters]);
    const command = result?.command;
    // Kysely's Postgres driver reports COMMIT/ROLLBACK this way so it can tell a COMMIT
    // that Postgres turned into a ROLLBACK (an aborted transaction).
    if (command === "COMMIT" || command === "ROLLBACK") return { rows: [{ command } as R] };
    return {
      rows: (result?.rows ?? []) as R[],
      numAffectedRows:
        command !== undefined && ROW_COUNT_COMMANDS.has(command) ? BigInt(result?.rowCount ?? 0) : undefined,
    };
  }

  // biome-ignore lint/correctness/useYield: streaming is not supported, said loudly
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("streaming queries are not supported on PGlite");
  }
}

class PgliteDriver implements Driver {
  private readonly connection: PgliteConnection;
  private holder: Promise<void> = Promise.resolve();
  private releaseHolder: (() => void) | undefined;

  constructor(private readonly pglite: PgliteSession) {
    this.connection = new PgliteConnection(pglite);
  }

  async init(): Promise<void> {
    await this.pglite.waitReady;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    // Chain onto the previous holder: each caller waits for the one before it to release.
    const previous = this.holder;
    let release!: () => void;
    this.holder = new Promise((resolve) => {
      release = resolve;
    });
    await previous;
    this.releaseHolder = release;
    return this.connection;
  }

  async releaseConnection(): Promise<void> {
    const release = this.releaseHolder;
    this.releaseHolder = undefined;
    release?.();
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const isolation = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : "";
    const access = settings.accessMode ? ` ${settings.accessMode}` : "";
    await connection.executeQuery(CompiledQuery.raw(`start transaction${isolation}${access}`));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const { rows } = await connection.executeQuery<{ command: string }>(CompiledQuery.raw("commit"));
    if (rows[0]?.command === "ROLLBACK") throw new AbortedTransactionError();
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("rollback"));
  }

  async destroy(): Promise<void> {
    if (!this.pglite.closed) await this.pglite.close();
  }
}

export class PgliteDialect implements Dialect {
  constructor(private readonly pglite: PgliteSession) {}

  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PgliteDriver(this.pglite);
  }
  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
}
