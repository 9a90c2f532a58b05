/**
 * Every CPU second a sandbox burns is charged, and a spent budget binds: a tenant starts a
 * spinning thread in one Execute that returns at once (only its wall time, milliseconds,
 * would be charged by the call) and tries to live off it. `sandpool serve` with docker
 * sandboxes, Redis and Postgres, a 4-second daily budget; on both isolation levels (a gVisor
 * sandbox's cgroup holds its sentry, whose CPU is charged too).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { budgetDay } from "../../../src/admission/admission.js";
import { type Isolation, isolationLevels } from "../../../src/policy-schema/isolation-levels.js";
import type { CliServer } from "../../support/cli.js";
import type { ContractClient } from "../../support/contract-client.js";
import { gvisorSuiteAvailable } from "../../support/docker-suite.js";
import {
  createServeDeployment,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { waitFor } from "../../support/wait-for.js";

const available = (await serveStackAvailable()) && (await gvisorSuiteAvailable());

const BUDGET_SECONDS = 4;
const configOf = (isolation: Isolation) => `
pools:
  - name: default
    image: sandpool/sandbox:dev
    isolation: ${isolation}
    minIdle: 2
    maxTotal: 6
    coldStartTimeoutMs: 60000
policy:
  execSecondsPerDay: ${BUDGET_SECONDS}
intervals:
  warmMs: 500
  reapMs: 500
  cpuMeterMs: 1000
  reconcileMs: 5000
  orphanGraceMs: 70000
`;

const SPIN = [
  "import threading",
  "def spin():",
  "    while True:",
  "        pass",
  "threading.Thread(target=spin, daemon=True).start()",
  "print('spinning')",
].join("\n");

describe.skipIf(!available).each(isolationLevels)(
  "the execution budget against a spinning thread (serve, docker, %s)",
  (isolation) => {
    let deployment: ServeDeployment;
    let replica: CliServer;
    let client: ContractClient;

    beforeAll(async () => {
      deployment = await createServeDeployment(configOf(isolation));
      replica = await deployment.startReplica();
      client = await deployment.client(replica, "spinner");
    }, 180_000);
    afterAll(() => deployment?.close(), 120_000);

    const sessionIdOf = (answer: { body: unknown }) => (answer.body as { session_id: string }).session_id;

    it("charges the thread's CPU, stops it once the day is spent, and refuses more work with 429", async () => {
      const idle = sessionIdOf(await client.createSession());
      const spinner = sessionIdOf(await client.createSession());
      const started = Date.now();
      const spun = await client.exec(spinner, { tool: "code_execution", input: { code: SPIN } });
      expect(spun.status).toBe(200);

      // The spinner's container: its CPU must stop rising once it is stopped.
      const store = await deployment.store();
      const day = budgetDay(Date.now());
      // The thread's CPU brings the day to its budget, and the sandbox running code is then
      // stopped (the meter reads every second). Not timed from the counter: while the call's
      // reservation of the rest of the budget is held (a second or so after the call, the
      // replica's allotment), the counter reads as spent before any CPU is.
      await waitFor(
        async () => (await client.getSession(spinner)).status === 404,
        30_000,
        "the spinning session to be stopped",
      );
      const stoppedAfterMs = Date.now() - started;
      expect(await store.readBudget("spinner", day)).toBeGreaterThanOrEqual(BUDGET_SECONDS * 1000);
      await waitFor(
        async () => {
          const sessions = await store.listLeases();
          return !sessions.some((lease) => lease.sessionId === spinner);
        },
        5_000,
        "the spinner's lease to be gone",
      );
      // Stopped once it had burned the budget, not before: 4 s of CPU at the least.
      expect(stoppedAfterMs).toBeGreaterThanOrEqual(BUDGET_SECONDS * 1000 * 0.8);

      // Every later Execute and CreateSession of the workspace: the documented 429.
      const refusedExec = await client.exec(idle, { tool: "code_execution", input: { code: "print(1)" } });
      expect(refusedExec.status).toBe(429);
      expect((refusedExec.body as { detail: { code: string } }).detail.code).toBe("quota.exec_budget");
      const refusedCreate = await client.createSession();
      expect(refusedCreate.status).toBe(429);
      expect((refusedCreate.body as { detail: { code: string } }).detail.code).toBe("quota.exec_budget");
      // The idle session still answers at once for what costs no execution: its files.
      const listed = await client.listFiles(idle);
      expect(listed.status).toBe(200);

      // Another workspace is untouched.
      const other = await deployment.client(replica, "bystander");
      const theirs = sessionIdOf(await other.createSession());
      expect((await other.run(theirs, "code_execution", { code: "print(6*7)" })).stdout).toBe("42\n");
    }, 90_000);

    it("records the sandbox's CPU in usage, counted from its lease", async () => {
      const { Client } = await import("pg");
      const db = new Client({ connectionString: deployment.databaseUrl });
      await db.connect();
      try {
        // Usage is written behind; the stopped session's record arrives within a flush.
        let cpu: number[] = [];
        await waitFor(
          async () => {
            const { rows } = await db.query<{ quantity: string }>(
              "select quantity from usage_events where workspace_id = 'spinner' and kind = 'sandbox_cpu'",
            );
            cpu = rows.map((row) => Number(row.quantity));
            return cpu.length > 0;
          },
          15_000,
          "the sandbox_cpu usage records",
        );
        // The spinner burned at least the budget; its server's start-up is not counted in.
        expect(Math.max(...cpu)).toBeGreaterThanOrEqual(BUDGET_SECONDS * 1000 * 0.8);
      } finally {
        await db.end();
      }
    }, 30_000);
  },
);
