import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { migrateToLatest, pendingMigrations } from "../../../src/store/sql/migrate.js";
import { openPglite, openPostgres } from "../../../src/store/sql/open-database.js";
import { PolicyRepository } from "../../../src/store/sql/policy-repository.js";
import { openFreshPostgres, postgresAvailable, postgresUrl } from "./databases.js";

describe.skipIf(!postgresAvailable)("openPostgres", () => {
  it("refuses a schema name it would have to escape", () => {
    expect(() => openPostgres(postgresUrl, { schema: 'x"; drop table y; --' })).toThrow(
      /invalid schema name/,
    );
  });

  it("puts the given schema on every pooled connection's search path", async () => {
    const opened = await openFreshPostgres();
    try {
      const schemas = await Promise.all(
        Array.from({ length: 4 }, () =>
          opened.db.transaction().execute(async (tx) => {
            const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(tx);
            await sql`select pg_sleep(0.05)`.execute(tx); // hold the connection so the pool opens others
            return rows[0]?.schema;
          }),
        ),
      );
      expect(new Set(schemas).size).toBe(1);
      expect(schemas[0]).toMatch(/^test_[0-9a-f]{12}$/);
    } finally {
      await opened.close();
    }
  });

  it("cuts off a statement that runs past the statement timeout", async () => {
    const opened = await openFreshPostgres({ statementTimeoutMs: 200 });
    try {
      await expect(sql`select pg_sleep(2)`.execute(opened.db)).rejects.toMatchObject({ code: "57014" });
    } finally {
      await opened.close();
    }
  });

  it("fails fast when nothing listens at the address", async () => {
    const db = openPostgres("postgres://postgres@127.0.0.1:1/test");
    const started = Date.now();
    await expect(sql`select 1`.execute(db)).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(5_000);
    await db.destroy();
  });
});

describe("openPglite", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it("keeps its data in dataDir across restarts", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sandpool-pglite-"));
    dirs.push(dir);
    const first = await openPglite(dir);
    await migrateToLatest(first);
    await new PolicyRepository(first).put("ws-persist", { sessionsPerMinute: 3 }, "alice");
    await first.destroy();

    const second = await openPglite(dir);
    try {
      expect(await pendingMigrations(second)).toEqual([]);
      expect(await new PolicyRepository(second).get("ws-persist")).toMatchObject({ sessionsPerMinute: 3 });
    } finally {
      await second.destroy();
    }
  });
});
