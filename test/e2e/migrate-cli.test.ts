/**
 * `sandpool migrate` as an operator runs it (the built CLI) against a fresh Postgres database:
 * --dry-run lists what is pending and applies nothing, a run applies it, a second run has
 * nothing to do; --json says the same as objects; no database is a one-line reason, exit 1.
 * Needs `npm run build` first.
 */
import { randomBytes } from "node:crypto";
import { readdir } from "node:fs/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresAvailable, postgresUrl } from "../integration/store/databases.js";
import { requireBuiltCli, runCli } from "../support/cli.js";

const database = `sandpool_migrate_${randomBytes(4).toString("hex")}`;
const databaseUrl = (() => {
  const url = new URL(postgresUrl);
  url.pathname = `/${database}`;
  return url.toString();
})();

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The migrations this build has, by name (the file names without .sql), in order. */
async function listMigrations(): Promise<string[]> {
  const files = await readdir(new URL("../../migrations/", import.meta.url));
  return files
    .filter((file) => file.endsWith(".sql"))
    .sort()
    .map((file) => file.slice(0, -".sql".length));
}

const hermetic = { DATABASE_URL: "" };
const migrate = (args: string[]) =>
  runCli(["migrate", ...args], { env: { ...hermetic, DATABASE_URL: databaseUrl }, timeoutMs: 30_000 });

describe.skipIf(!postgresAvailable)("sandpool migrate", () => {
  beforeAll(async () => {
    requireBuiltCli();
    await admin(`create database ${database}`);
  });
  afterAll(() => admin(`drop database if exists ${database} with (force)`));

  it("lists, applies and then has nothing to do, as text and as JSON", async () => {
    const all = await listMigrations();
    expect(all.length).toBeGreaterThan(0);

    const dry = await migrate(["--dry-run", "--json"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toEqual({ pending: all, applied: [], dryRun: true });
    const dryText = await migrate(["--dry-run"]);
    expect(dryText.stdout).toContain("Pending migrations:");

    const applied = await migrate(["--json"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(JSON.parse(applied.stdout)).toEqual({ pending: all, applied: all, dryRun: false });

    const again = await migrate(["--json"]);
    expect(JSON.parse(again.stdout)).toEqual({ pending: [], applied: [], dryRun: false });
    expect((await migrate([])).stdout).toContain("The schema is current");
  });

  it("refuses without a database: a one-line reason and exit code 1, with or without --json", async () => {
    for (const args of [["migrate"], ["migrate", "--json"]]) {
      const result = await runCli(args, { env: hermetic });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toContain("no database: set DATABASE_URL or pass --database-url");
    }
  });
});
