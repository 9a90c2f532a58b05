/**
 * Postgres going away while a connection is checked out (inside a transaction, between its
 * queries) fails that transaction and nothing else: before, the client's own 'error' event
 * had no listener and ended the gateway (seen in CI as a replica gone mid-test).
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgres } from "../../../src/store/sql/open-database.js";
import { type PausableRelay, startPausableRelay } from "../../support/pausable-relay.js";

const url = new URL(process.env.SANDPOOL_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test");

describe("a Postgres connection lost while checked out", () => {
  let relay: PausableRelay;
  beforeAll(async () => {
    relay = await startPausableRelay(Number(url.port || 5432));
  });
  afterAll(() => relay?.close());

  it("fails the transaction that held it, and the pool serves again once Postgres is back", async () => {
    const relayed = new URL(url);
    relayed.host = `127.0.0.1:${relay.port}`;
    const db = openPostgres(relayed.toString());
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on("uncaughtException", onUncaught);
    try {
      const transaction = db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        await relay.stop(); // the connection is cut between two queries of the transaction
        await new Promise((resolve) => setTimeout(resolve, 200));
        await sql`select 2`.execute(trx);
      });
      await expect(transaction).rejects.toThrow();
      expect(uncaught).toEqual([]);
      await relay.start();
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db);
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      process.off("uncaughtException", onUncaught);
      await relay.start().catch(() => undefined);
      await db.destroy();
    }
  });
});
