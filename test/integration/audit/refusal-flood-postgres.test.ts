/**
 * A flood of refusals while Postgres is slow (its usage table locked: every write waits) or
 * stopped (the connection cut, new ones refused) loses no usage record: billing events wait
 * in a queue of their own, written first, and only refusals are ever dropped for room. The
 * flood is what an attacker sends: refusals with a fresh session id each, across many
 * workspaces and codes, 150 000 of them, more than the buffer used to hold in all.
 *
 * Real Postgres (a schema of its own), the real usage buffer, repository and refusal audit.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import pg from "pg";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordRefusal } from "../../../src/audit/record-refusal.js";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { BufferedUsageSink } from "../../../src/metering/buffered-usage-sink.js";
import type { Database } from "../../../src/store/sql/database-types.js";
import { migrateToLatest } from "../../../src/store/sql/migrate.js";
import { openPostgres } from "../../../src/store/sql/open-database.js";
import { UsageRepository } from "../../../src/store/sql/usage-repository.js";
import { type PausableRelay, startPausableRelay } from "../../support/pausable-relay.js";
import { waitFor } from "../../support/wait-for.js";
import { postgresAvailable, postgresUrl } from "../store/databases.js";

const REFUSALS = Number(process.env.FLOOD ?? 150_000);
const SESSIONS = 40;
const FLOOD_WORKSPACES = 50;
const CODES = ["session.not_found", "quota.calls_in_flight", "policy.tool_not_allowed"] as const;

describe.skipIf(!postgresAvailable)("a refusal flood while Postgres is slow or stopped", () => {
  const schema = `refusal_flood_${randomBytes(5).toString("hex")}`;
  let admin: pg.Client;
  let direct: Kysely<Database>;
  let relay: PausableRelay;
  let viaRelay: Kysely<Database>;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    await admin.query(`create schema "${schema}"`);
    direct = openPostgres(postgresUrl, { schema });
    await migrateToLatest(direct);
    relay = await startPausableRelay(Number(new URL(postgresUrl).port || 5432));
    const relayed = new URL(postgresUrl);
    relayed.host = `127.0.0.1:${relay.port}`;
    viaRelay = openPostgres(relayed.toString(), { schema, statementTimeoutMs: 30_000 });
  });
  afterAll(async () => {
    await viaRelay?.destroy();
    await relay?.close();
    await direct?.destroy();
    await admin?.query(`drop schema if exists "${schema}" cascade`);
    await admin?.end();
  });

  /**
   * Records each session's start, calls and end, with the flood of refusals in between
   * (over a few seconds, so it spans several of the audit's seconds); returns the calls' total.
   */
  async function billingAmidFlood(sink: BufferedUsageSink, workspace: string): Promise<number> {
    let milliseconds = 0;
    for (let s = 0; s < SESSIONS; s++) {
      sink.record({ workspace, sessionId: `s${s}`, kind: "session_created", sandboxId: `sb${s}` });
    }
    const rounds = 10;
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < REFUSALS / rounds; i++) {
        const code = CODES[i % CODES.length]!;
        recordRefusal(sink, {
          principal: {
            workspace: `flood-${i % FLOOD_WORKSPACES}`,
            subject: "attacker",
            tokenId: undefined,
            expiresAt: 0,
          },
          operation: "sessions.get",
          error: new SandpoolError(code, "refused"),
          sessionId: randomUUID(), // a fresh id each time, as the attacker sends
        });
      }
      for (let s = 0; s < SESSIONS; s++) {
        sink.record({ workspace, sessionId: `s${s}`, kind: "exec", tool: "code_execution", quantity: 7 });
        milliseconds += 7;
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    for (let s = 0; s < SESSIONS; s++) {
      sink.record({ workspace, sessionId: `s${s}`, kind: "session_ended", quantity: 1_000 });
    }
    return milliseconds;
  }

  async function billingStored(workspace: string) {
    const { rows } = await admin.query<{ kind: string; rows: string; events: string; quantity: string }>(
      `select kind, count(*) as rows, sum(events) as events, sum(quantity) as quantity
         from "${schema}".usage_events where workspace_id = $1 group by kind order by kind`,
      [workspace],
    );
    return Object.fromEntries(
      rows.map((row) => [row.kind, { events: Number(row.events), quantity: Number(row.quantity) }]),
    );
  }

  const expected = (execMs: number) => ({
    exec: { events: SESSIONS * 10, quantity: execMs },
    session_created: { events: SESSIONS, quantity: 0 },
    session_ended: { events: SESSIONS, quantity: SESSIONS * 1_000 },
  });

  async function deniedRows(): Promise<number> {
    const { rows } = await admin.query<{ n: string }>(
      `select count(*) as n from "${schema}".usage_events where kind = 'denied'`,
    );
    return Number(rows[0]!.n);
  }

  it("keeps every usage record when the usage table is locked (every write waits)", async () => {
    const workspace = `slow-${randomBytes(3).toString("hex")}`;
    const sink = new BufferedUsageSink(
      new UsageRepository(direct),
      pino({ level: process.env.FLOOD_LOG ?? "silent" }),
      100,
    );
    const deniedBefore = await deniedRows();
    const locker = new pg.Client({ connectionString: postgresUrl });
    await locker.connect();
    await locker.query("begin");
    await locker.query(`lock table "${schema}".usage_events in access exclusive mode`);
    let execMs: number;
    try {
      execMs = await billingAmidFlood(sink, workspace);
    } finally {
      await locker.query("rollback");
      await locker.end();
    }
    await sink.close();
    expect(await billingStored(workspace)).toEqual(expected(execMs));
    // The refusals themselves: a row per workspace, code and second, not one per id.
    expect(await deniedRows()).toBeLessThanOrEqual(deniedBefore + FLOOD_WORKSPACES * CODES.length * 8);
  }, 120_000);

  it("keeps every usage record while the database is stopped, dropping only refusals for room", async () => {
    const workspace = `stopped-${randomBytes(3).toString("hex")}`;
    const sink = new BufferedUsageSink(
      new UsageRepository(viaRelay),
      pino({ level: process.env.FLOOD_LOG ?? "silent" }),
      100,
      {
        maxRefusalsWaiting: 200,
      },
    );
    await relay.stop();
    const execMs = await billingAmidFlood(sink, workspace);
    await relay.start();
    // The pool's clients died with the connections: the flush retries until a fresh one gets through.
    await waitFor(
      async () => {
        await sink.flush();
        return (await billingStored(workspace)).session_ended?.events === SESSIONS;
      },
      30_000,
      "the usage records written once the database is back",
    );
    await sink.close();
    expect(await billingStored(workspace)).toEqual(expected(execMs));
  }, 120_000);
});
