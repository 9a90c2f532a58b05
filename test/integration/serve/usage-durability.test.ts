/**
 * Not one answered call unbilled (issue 45): two `sandpool serve` replicas on one Redis and
 * one Postgres, workers over four workspaces creating sessions, calling Execute and destroying them through
 * both, and one replica killed with SIGKILL (a node crash, an OOM kill) under that load.
 * Every Execute answered 200 is recorded as usage, per workspace, exactly once: none lost
 * with the replica that answered it, none counted twice by the drainers that move the
 * usage backlog to Postgres. Sessions answered 201 are recorded as started, and every one
 * destroyed as ended.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgres } from "../../../src/store/sql/open-database.js";
import type { CliServer } from "../../support/cli.js";
import type { ContractClient } from "../../support/contract-client.js";
import {
  createServeDeployment,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { waitFor } from "../../support/wait-for.js";

const available = await serveStackAvailable();

const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 6
    maxTotal: 16
    coldStartTimeoutMs: 60000
intervals:
  warmMs: 500
  reapMs: 500
  reconcileMs: 2000
  orphanGraceMs: 70000
usageBacklog:
  drainMs: 200
`;
const WORKSPACES = ["bill-a", "bill-b", "bill-c", "bill-d"];
const WORKERS = 8;
const LOAD_MS = 15_000;
const KILL_AT_MS = 5_000;

interface Tally {
  execs: number;
  created: number;
  destroyed: number;
}

describe.skipIf(!available)("usage of answered calls survives a replica killed with SIGKILL", () => {
  let deployment: ServeDeployment;
  let one: CliServer;
  let two: CliServer;

  beforeAll(async () => {
    deployment = await createServeDeployment(CONFIG);
    [one, two] = await Promise.all([deployment.startReplica(), deployment.startReplica()]);
  }, 180_000);
  afterAll(() => deployment?.close(), 120_000);

  it("records every Execute answered 200, per workspace, exactly once", async () => {
    const tallies = new Map(WORKSPACES.map((ws) => [ws, { execs: 0, created: 0, destroyed: 0 }]));
    const clients = new Map<string, [ContractClient, ContractClient]>();
    for (const ws of WORKSPACES)
      clients.set(ws, [await deployment.client(one, ws), await deployment.client(two, ws)]);
    let killed = false;
    const failures: string[] = [];
    // One session per worker, made before the load: the load is Executes through both replicas.
    const sessions: string[] = [];
    for (let i = 0; i < WORKERS; i++) {
      const ws = WORKSPACES[i % WORKSPACES.length]!;
      const created = await clients.get(ws)![i % 2]!.createSession();
      expect(created.status).toBe(201);
      tallies.get(ws)!.created++;
      sessions.push((created.body as { session_id: string }).session_id);
    }
    const started = Date.now();
    const worker = async (index: number) => {
      const ws = WORKSPACES[index % WORKSPACES.length]!;
      const tally = tallies.get(ws)!;
      const [viaOne, viaTwo] = clients.get(ws)!;
      // Alternating replicas, call by call; after the kill only the survivor answers.
      let turn = index;
      const next = () => (killed ? viaTwo : turn++ % 2 === 0 ? viaOne : viaTwo);
      while (Date.now() - started < LOAD_MS) {
        try {
          const answer = await next().exec(sessions[index]!, {
            tool: "code_execution",
            input: { code: "print(1)" },
          });
          if (answer.status === 200) tally.execs++;
          else failures.push(`exec ${answer.status} ${answer.text.slice(0, 200)}`);
        } catch (error) {
          // The killed replica's connection: the call was not answered.
          failures.push(String(error).slice(0, 200));
        }
      }
      if ((await viaTwo.destroy(sessions[index]!)).status === 204) tally.destroyed++;
    };
    const load = Promise.all(Array.from({ length: WORKERS }, (_, i) => worker(i)));
    await new Promise((resolve) => setTimeout(resolve, KILL_AT_MS));
    one.process.kill("SIGKILL");
    killed = true;
    await load;
    console.log("calls not answered", failures.length, JSON.stringify(failures.slice(0, 3)));

    const answered = Object.fromEntries([...tallies].map(([ws, t]) => [ws, t]));
    const total = [...tallies.values()].reduce((sum, t) => sum + t.execs, 0);
    expect(total).toBeGreaterThan(WORKERS * 4);

    const db = openPostgres(deployment.databaseUrl);
    try {
      const recorded = async () => {
        const rows = await sql<{ workspace_id: string; kind: string; events: string }>`
          select workspace_id, kind, sum(events)::text as events from usage_events
          where kind in ('exec', 'session_created', 'session_ended') group by workspace_id, kind`.execute(db);
        const byWorkspace: Record<string, Tally> = {};
        for (const ws of WORKSPACES) byWorkspace[ws] = { execs: 0, created: 0, destroyed: 0 };
        for (const row of rows.rows) {
          const tally = byWorkspace[row.workspace_id];
          if (!tally) continue;
          if (row.kind === "exec") tally.execs = Number(row.events);
          if (row.kind === "session_created") tally.created = Number(row.events);
          if (row.kind === "session_ended") tally.destroyed = Number(row.events);
        }
        return byWorkspace;
      };
      // The survivor drains the backlog, the dead replica's claimed batch once its claim lapses.
      await waitFor(
        async () => {
          const now = await recorded();
          return WORKSPACES.every((ws) => now[ws]!.execs >= answered[ws]!.execs);
        },
        60_000,
        "the usage of every answered call",
        500,
      ).catch(() => undefined);
      // A moment more: anything counted twice would show up now.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const now = await recorded();
      console.log("answered", JSON.stringify(answered), "recorded", JSON.stringify(now));
      for (const ws of WORKSPACES) {
        expect({ ws, execs: now[ws]!.execs }).toEqual({ ws, execs: answered[ws]!.execs });
        expect(now[ws]!.created).toBe(answered[ws]!.created);
        expect(now[ws]!.destroyed).toBe(answered[ws]!.destroyed);
      }
    } finally {
      await db.destroy();
    }
  }, 180_000);
});
