/**
 * Quotas through the gateway (docs/architecture.md, "Session lifecycle", and "The pipeline",
 * step 8): concurrent-session slots (refused with nothing leased, released on every path that
 * ends a session, never exceeded under parallel creates), the session rate and the daily
 * execution budget.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { budgetDay } from "../../../src/admission/admission.js";
import type { EditablePolicyFields } from "../../../src/store/sql/policy-row.js";
import type { Answer, ContractClient } from "../../support/contract-client.js";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";
import { processExists } from "../../support/sandbox-server.js";
import { waitFor } from "../../support/wait-for.js";

const POOL = "default";
const MIN_IDLE = 1;

let harness: TestGateway;
beforeAll(async () => {
  harness = await startTestGateway({
    // Demand off: the pool settles at exactly MIN_IDLE idle (no burst reserve from quick leases).
    pools: [{ name: POOL, image: "sandpool/sandbox:dev", minIdle: MIN_IDLE, maxTotal: 12, demand: false }],
  });
});
afterAll(() => harness.close());

/** A fresh workspace per test, so slots, rates and budgets never leak between tests. */
const freshWorkspace = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

async function setPolicy(workspace: string, fields: Partial<EditablePolicyFields>): Promise<void> {
  await harness.gateway.policyRepository.put(workspace, fields, "quota-test");
  harness.gateway.services.policies.invalidate(workspace);
}

function sessionIdOf(answer: Answer): string {
  expect(answer.status, answer.text).toBe(201);
  return (answer.body as { session_id: string }).session_id;
}

function codeOf(answer: Answer): string | undefined {
  return (answer.body as { detail?: { code?: string } }).detail?.code;
}

function expectRefused(answer: Answer, status: number, code: string): void {
  expect(answer.status, answer.text).toBe(status);
  expect(codeOf(answer)).toBe(code);
  const retryAfter = Number(answer.headers.get("retry-after"));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After: ${retryAfter}`).toBe(true);
}

async function leaseOf(sessionId: string) {
  const lease = (await harness.store.listLeases()).find((l) => l.sessionId === sessionId);
  if (!lease) throw new Error(`no lease for ${sessionId}`);
  return lease;
}

const slots = (workspace: string) => harness.store.countSlots(workspace, Date.now());
const leasesOf = async (workspace: string) =>
  (await harness.store.listLeases()).filter((l) => l.workspace === workspace);

/** Waits until warm-up and destruction are done: the pool holds exactly its leases and idle ones. */
async function poolSettled(): Promise<{ idle: string[]; members: string[]; leases: string[] }> {
  let snapshot = { idle: [] as string[], members: [] as string[], leases: [] as string[] };
  await waitFor(
    async () => {
      const idle = (await harness.store.listIdle(POOL)).map((r) => r.sandboxId).sort();
      const members = (await harness.store.listMembers(POOL, Date.now())).sort();
      const leases = (await harness.store.listLeases()).map((l) => l.sessionId).sort();
      const leased = (await harness.store.listLeases()).map((l) => l.sandbox.sandboxId);
      snapshot = { idle, members, leases };
      return (
        idle.length === MIN_IDLE &&
        members.length === idle.length + leased.length &&
        [...idle, ...leased].every((id) => members.includes(id))
      );
    },
    15_000,
    "the pool to settle",
  );
  return snapshot;
}

describe("concurrent sessions", () => {
  it("refuses the session over the limit with 429 and Retry-After, leasing nothing", async () => {
    const workspace = freshWorkspace("conc");
    await setPolicy(workspace, { maxConcurrentSessions: 2 });
    const client = await harness.client(workspace);
    const first = sessionIdOf(await client.createSession());
    const second = sessionIdOf(await client.createSession());

    const before = await poolSettled();
    const third = await client.createSession();
    expectRefused(third, 429, "quota.concurrent_sessions");
    const after = {
      idle: (await harness.store.listIdle(POOL)).map((r) => r.sandboxId).sort(),
      members: (await harness.store.listMembers(POOL, Date.now())).sort(),
      leases: (await harness.store.listLeases()).map((l) => l.sessionId).sort(),
    };
    expect(after).toEqual(before);
    expect((await leasesOf(workspace)).map((l) => l.sessionId).sort()).toEqual([first, second].sort());
    expect(await slots(workspace)).toBe(2);

    // Ending one frees its slot for a new session.
    expect((await client.destroy(first)).status).toBe(204);
    const fourth = sessionIdOf(await client.createSession());
    expect(await slots(workspace)).toBe(2);
    expectRefused(await client.createSession(), 429, "quota.concurrent_sessions");
    await client.destroy(second);
    await client.destroy(fourth);
    expect(await slots(workspace)).toBe(0);
  });

  it("does not limit another workspace", async () => {
    const limited = freshWorkspace("limited");
    const other = freshWorkspace("other");
    await setPolicy(limited, { maxConcurrentSessions: 1 });
    const a = await harness.client(limited);
    const b = await harness.client(other);
    const held = sessionIdOf(await a.createSession());
    expectRefused(await a.createSession(), 429, "quota.concurrent_sessions");
    const b1 = sessionIdOf(await b.createSession());
    const b2 = sessionIdOf(await b.createSession());
    expect(await slots(other)).toBe(2);
    expect(await slots(limited)).toBe(1);
    for (const id of [b1, b2]) await b.destroy(id);
    await a.destroy(held);
  });

  it("never exceeds the limit under parallel creates", async () => {
    const workspace = freshWorkspace("parallel");
    await setPolicy(workspace, { maxConcurrentSessions: 3 });
    const client = await harness.client(workspace);
    const answers = await Promise.all(Array.from({ length: 10 }, () => client.createSession()));
    const created = answers.filter((a) => a.status === 201);
    const refused = answers.filter((a) => a.status !== 201);
    expect(created).toHaveLength(3);
    expect(refused).toHaveLength(7);
    for (const answer of refused) expectRefused(answer, 429, "quota.concurrent_sessions");
    expect(await slots(workspace)).toBe(3);
    expect(await leasesOf(workspace)).toHaveLength(3);
    const ids = created.map(sessionIdOf);
    expect(new Set((await leasesOf(workspace)).map((l) => l.sandbox.sandboxId)).size).toBe(3);
    for (const id of ids) await client.destroy(id);
    expect(await slots(workspace)).toBe(0);
  });

  describe("releases the slot on every path that ends a session", () => {
    it("DELETE", async () => {
      const workspace = freshWorkspace("end-delete");
      await setPolicy(workspace, { maxConcurrentSessions: 1 });
      const client = await harness.client(workspace);
      const id = sessionIdOf(await client.createSession());
      expectRefused(await client.createSession(), 429, "quota.concurrent_sessions");
      expect((await client.destroy(id)).status).toBe(204);
      expect(await slots(workspace)).toBe(0);
      await client.destroy(sessionIdOf(await client.createSession()));
    });

    it("idle timeout", async () => {
      const workspace = freshWorkspace("end-idle");
      await setPolicy(workspace, { maxConcurrentSessions: 1 });
      const client = await harness.client(workspace);
      await poolSettled(); // a warm lease: a slow cold start would eat into the timeout
      sessionIdOf(await client.createSession({ idle_timeout_seconds: 3 }));
      expectRefused(await client.createSession(), 429, "quota.concurrent_sessions");
      // Nothing touches the session: the reaper alone must end it and free the slot.
      await waitFor(async () => (await leasesOf(workspace)).length === 0, 10_000, "the idle reap");
      expect(await slots(workspace)).toBe(0);
      await client.destroy(sessionIdOf(await client.createSession()));
    });

    it("maximum lifetime", async () => {
      const workspace = freshWorkspace("end-lifetime");
      await setPolicy(workspace, { maxConcurrentSessions: 1 });
      const client = await harness.client(workspace);
      await poolSettled();
      sessionIdOf(await client.createSession({ max_lifetime_seconds: 3, idle_timeout_seconds: 600 }));
      expectRefused(await client.createSession(), 429, "quota.concurrent_sessions");
      await waitFor(async () => (await leasesOf(workspace)).length === 0, 10_000, "the lifetime reap");
      expect(await slots(workspace)).toBe(0);
      await client.destroy(sessionIdOf(await client.createSession()));
    });

    it("sandbox death", async () => {
      const workspace = freshWorkspace("end-death");
      await setPolicy(workspace, { maxConcurrentSessions: 1 });
      const client = await harness.client(workspace);
      const id = sessionIdOf(await client.createSession());
      expectRefused(await client.createSession(), 429, "quota.concurrent_sessions");
      const pid = Number((await leaseOf(id)).sandbox.runtimeId);
      process.kill(pid, "SIGKILL");
      await waitFor(() => !processExists(pid), 5_000, "the sandbox process to die");

      const call = await client.exec(id, { tool: "code_execution", input: { code: "1" } });
      expect(call.status, call.text).toBe(502);
      expect(codeOf(call)).toBe("sandbox.unreachable");
      expect(await slots(workspace)).toBe(0);
      expect((await client.exec(id, { tool: "code_execution", input: { code: "1" } })).status).toBe(404);
      await client.destroy(sessionIdOf(await client.createSession()));
    });
  });
});

describe("session rate", () => {
  it("refuses the creation over the per-minute rate with 429 and Retry-After", async () => {
    const workspace = freshWorkspace("rate");
    await setPolicy(workspace, { sessionsPerMinute: 2 });
    const client = await harness.client(workspace);
    const first = sessionIdOf(await client.createSession());
    await client.destroy(first); // the rate counts creations, not open sessions
    const second = sessionIdOf(await client.createSession());
    const leasesBefore = (await harness.store.listLeases()).length;

    const third = await client.createSession();
    expectRefused(third, 429, "quota.session_rate");
    expect(Number(third.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    // The slot taken for the refused creation was given back, and nothing was leased.
    expect(await slots(workspace)).toBe(1);
    expect((await harness.store.listLeases()).length).toBe(leasesBefore);
    await client.destroy(second);
  });
});

describe("execution budget", () => {
  const charged = (workspace: string) => harness.store.readBudget(workspace, budgetDay(Date.now()));

  it("charges the wall time the gateway measures around the call", async () => {
    const workspace = freshWorkspace("wall");
    const client = await harness.client(workspace);
    const id = sessionIdOf(await client.createSession());
    expect(await charged(workspace)).toBe(0);
    const slept = await client.run(id, "bash_code_execution", { command: "sleep 5" });
    expect(slept.return_code).toBe(0);
    const total = await charged(workspace);
    expect(total).toBeGreaterThanOrEqual(5_000);
    expect(total).toBeLessThan(6_500);
    await client.destroy(id);
  });

  it("cuts a call at the time that remains, then refuses execution and new sessions", async () => {
    const workspace = freshWorkspace("budget");
    await setPolicy(workspace, { execSecondsPerDay: 1 });
    const client: ContractClient = await harness.client(workspace);
    const id = sessionIdOf(await client.createSession());

    // 60 s asked, 1 s granted: the sandbox stops the call at one second.
    const spent = await client.run(
      id,
      "code_execution",
      { code: "import time\ntime.sleep(3)" },
      { timeout_seconds: 60 },
    );
    expect(spent.return_code).toBe(124);
    expect(await charged(workspace)).toBeLessThanOrEqual(1_000);

    const next = await client.exec(id, { tool: "code_execution", input: { code: "print(1)" } });
    expectRefused(next, 429, "quota.exec_budget");
    expectRefused(await client.createSession(), 429, "quota.exec_budget");
    // The refused creation holds no slot: only the open session does.
    expect(await slots(workspace)).toBe(1);
    await client.destroy(id);
  });

  it("parallel calls cannot together run past the budget: the late ones are refused", async () => {
    const workspace = freshWorkspace("parallel-budget");
    await setPolicy(workspace, { execSecondsPerDay: 4 });
    const client = await harness.client(workspace);
    const ids = [sessionIdOf(await client.createSession()), sessionIdOf(await client.createSession())];
    // Eight calls of 3 s at once, four queued on each session.
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        client.exec(ids[i % 2]!, {
          tool: "bash_code_execution",
          input: { command: "sleep 3" },
          timeout_seconds: 3,
        }),
      ),
    );
    const ran = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status !== 200);
    // 4 s hold one full call (3 s) and one cut to the remaining second.
    expect(ran).toHaveLength(2);
    for (const answer of refused) expectRefused(answer, 429, "quota.exec_budget");
    const total = await charged(workspace);
    expect(total).toBeGreaterThanOrEqual(3_000);
    expect(total).toBeLessThanOrEqual(4_000);
    for (const id of ids) await client.destroy(id);
  });
});
