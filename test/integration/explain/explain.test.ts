/**
 * Explain (`POST /admin/v1/explain`) on a gateway as `sandpool serve` runs it (Redis store,
 * Postgres, real sandbox servers), over HTTP: for an allowed call and for each kind of
 * refusal, explain starts, leases and touches no sandbox (the runtime's sandboxes, the pool's
 * idle and members, the leases unchanged) and counts against no quota (slots, the session
 * rate and the day's budget unchanged); its `code` is what the real call then answers.
 */
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { budgetDay, MINUTE_MS } from "../../../src/admission/admission.js";
import { mintToken } from "../../../src/auth/dev-keys.js";
import type { TraceStep } from "../../../src/explain/explain-trace.js";
import type { EditablePolicyFields } from "../../../src/store/sql/policy-row.js";
import { adminRequest } from "../../support/admin-api.js";
import type { Answer, ContractClient } from "../../support/contract-client.js";
import { TEST_IMAGE, TEST_SECRET, testAdminToken } from "../../support/gateway-harness.js";
import {
  createRedisDeployment,
  type RedisDeployment,
  type RedisReplica,
} from "../../support/redis-gateways.js";
import { waitFor } from "../../support/wait-for.js";

const POOL = "default";
const MIN_IDLE = 1;

let deployment: RedisDeployment;
let replica: RedisReplica;
let adminToken: string;

beforeAll(async () => {
  deployment = await createRedisDeployment({
    // Demand off: poolSettled waits for exactly MIN_IDLE idle, which the burst reserve of the
    // tests' quick leases would raise (src/pool/pool-demand.ts).
    pools: [{ name: POOL, image: TEST_IMAGE, minIdle: MIN_IDLE, maxTotal: 4, demand: false }],
    intervals: { warmMs: 100, reapMs: 100 },
  });
  replica = await deployment.startReplica();
  adminToken = await testAdminToken("explainer");
}, 60_000);
afterAll(() => deployment?.close());

const freshWorkspace = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

async function setPolicy(workspace: string, fields: Partial<EditablePolicyFields>): Promise<void> {
  await replica.gateway.policyRepository.put(workspace, fields, "explain-test");
  replica.gateway.services.policies.invalidate(workspace);
}

/** A step of the trace, as the admin API answers it. */
type Step = TraceStep;
interface Explained {
  workspace: string;
  operation: string;
  decision: "allow" | "deny";
  code: string | null;
  steps: Step[];
  effective: Record<string, unknown>;
}

async function explain(workspace: string, operation: string, args?: unknown): Promise<Explained> {
  const answer = await adminRequest(replica.url, adminToken, "POST", "/explain", {
    body: { workspace, operation, ...(args === undefined ? {} : { args }) },
  });
  expect(answer.status, answer.text).toBe(200);
  const body = answer.body as Explained;
  expect(body).toMatchObject({ workspace, operation, decision: expect.stringMatching(/^(allow|deny)$/) });
  expect(body.decision === "allow").toBe(body.code === null);
  const denied = body.steps.filter((step) => step.verdict === "deny");
  // The code is the first refusal's; every refusal names its code and rule.
  expect(body.code).toBe(denied[0]?.code ?? null);
  for (const step of body.steps) {
    expect(["mounted", "args", "resolve", "policy", "admit"]).toContain(step.step);
    if (step.verdict === "deny") expect(step.code && step.rule, JSON.stringify(step)).toBeTruthy();
  }
  expect(body.steps[0]).toMatchObject({ step: "mounted", verdict: "pass" });
  return body;
}

const stepOf = (explained: Explained, rule: string) => {
  const step = explained.steps.find((candidate) => candidate.rule === rule);
  if (!step) throw new Error(`no step ${rule} in ${JSON.stringify(explained.steps)}`);
  return step;
};

/** Everything explain must leave alone: sandboxes, the pool, leases, and the workspace's quotas. */
async function snapshot(workspace: string) {
  const { store } = replica;
  const now = Date.now();
  return {
    sandboxes: (await deployment.runtime.list()).map((sandbox) => sandbox.runtimeId).sort(),
    idle: (await store.listIdle(POOL)).map((record) => record.sandboxId).sort(),
    members: (await store.listMembers(POOL, now)).sort(),
    leases: (await store.listLeases()).map((lease) => `${lease.sessionId}@${lease.lastActivityAt}`).sort(),
    slots: await store.countSlots(workspace, now),
    rate: (await store.countRate(workspace, MINUTE_MS, now)).count,
    budgetMs: await store.readBudget(workspace, budgetDay(now)),
  };
}

/** Warm-up done: the pool holds its minIdle idle sandboxes and nothing is starting. */
async function poolSettled(): Promise<void> {
  await waitFor(
    async () => {
      const now = Date.now();
      const idle = await replica.store.countIdle(POOL);
      const members = await replica.store.countMembers(POOL, now);
      const leased = (await replica.store.listLeases()).length;
      return idle === MIN_IDLE && members === idle + leased;
    },
    20_000,
    "the pool to settle",
  );
}

/** Explains, checking that nothing explain must not touch moved. */
async function explainUntouched(workspace: string, operation: string, args?: unknown): Promise<Explained> {
  await poolSettled();
  const before = await snapshot(workspace);
  const explained = await explain(workspace, operation, args);
  // Twice: a second look must not find anything the first one took either.
  await explain(workspace, operation, args);
  expect(await snapshot(workspace)).toEqual(before);
  return explained;
}

const codeOf = (answer: Answer) => (answer.body as { detail?: { code?: string } }).detail?.code ?? null;

/** Sessions the test opened, ended after it so the pool never fills up. */
const opened: { client: ContractClient; session: string }[] = [];
afterEach(async () => {
  for (const { client, session } of opened.splice(0)) await client.destroy(session);
});

async function sessionOf(client: ContractClient): Promise<string> {
  const created = await client.createSession();
  expect(created.status, created.text).toBe(201);
  const session = (created.body as { session_id: string }).session_id;
  opened.push({ client, session });
  return session;
}

describe("explain of sessions.create", () => {
  it("allows a call within every limit, with the default image, a warm lease and the effective timeouts", async () => {
    const ws = freshWorkspace("allow");
    await setPolicy(ws, { idleTimeoutCeilingSeconds: 120 });
    const explained = await explainUntouched(ws, "sessions.create", { idle_timeout_seconds: 999 });
    expect(explained).toMatchObject({ decision: "allow", code: null });
    expect(explained.steps.map((step) => step.step)).toEqual([
      "mounted",
      "args",
      "policy",
      "policy",
      "policy",
      "policy",
      "policy",
      "admit",
      "admit",
      "admit",
      "admit",
    ]);
    expect(stepOf(explained, "image.default")).toMatchObject({ field: "defaultImage", value: TEST_IMAGE });
    expect(stepOf(explained, "session.idle_timeout")).toMatchObject({
      field: "idleTimeoutCeilingSeconds",
      value: 120,
      limit: 120,
    });
    expect(stepOf(explained, "pool.capacity")).toMatchObject({ verdict: "pass" });
    expect(stepOf(explained, "pool.capacity").detail).toMatch(/a warm lease/);
    expect(explained.effective).toMatchObject({
      image: TEST_IMAGE,
      pool: POOL,
      idleTimeoutSeconds: 120,
      idleTimeoutCeilingSeconds: 120,
      enabled: true,
    });

    const client = await replica.client(ws);
    const created = await client.createSession({ idle_timeout_seconds: 999 });
    expect(created.status, created.text).toBe(201);
    opened.push({ client, session: (created.body as { session_id: string }).session_id });
    expect((created.body as { idle_timeout_seconds: number }).idle_timeout_seconds).toBe(120);
  });

  it("denies a disabled workspace with policy.workspace_disabled, as the call is", async () => {
    const ws = freshWorkspace("disabled");
    await setPolicy(ws, { enabled: false });
    const explained = await explainUntouched(ws, "sessions.create", {});
    expect(explained.code).toBe("policy.workspace_disabled");
    expect(stepOf(explained, "workspace.enabled")).toMatchObject({
      verdict: "deny",
      field: "enabled",
      value: false,
    });
    expect(codeOf(await (await replica.client(ws)).createSession())).toBe(explained.code);
  });

  it("denies an image that is not allowed with policy.image_not_allowed, as the call is", async () => {
    const ws = freshWorkspace("image");
    const explained = await explainUntouched(ws, "sessions.create", { image: "not/allowed:1" });
    expect(explained.code).toBe("policy.image_not_allowed");
    expect(stepOf(explained, "image.allowed")).toMatchObject({
      verdict: "deny",
      field: "allowedImages",
      value: [TEST_IMAGE],
    });
    const answer = await (await replica.client(ws)).createSession({ image: "not/allowed:1" });
    expect(answer.status).toBe(403);
    expect(codeOf(answer)).toBe(explained.code);
  });

  it("denies a workspace that requires gVisor, where only container pools serve, with policy.isolation_required", async () => {
    const ws = freshWorkspace("isolation");
    await setPolicy(ws, { isolation: "gvisor" });
    const explained = await explainUntouched(ws, "sessions.create", {});
    expect(explained.code).toBe("policy.isolation_required");
    expect(stepOf(explained, "image.isolation")).toMatchObject({
      verdict: "deny",
      field: "isolation",
      value: "gvisor",
    });
    expect(stepOf(explained, "image.isolation").detail).toMatch(/no gvisor pool serves the image/);
    const answer = await (await replica.client(ws)).createSession();
    expect(answer.status).toBe(403);
    expect(codeOf(answer)).toBe(explained.code);
  });

  it("denies a malformed body with request.malformed, as the call is", async () => {
    const ws = freshWorkspace("malformed");
    const explained = await explainUntouched(ws, "sessions.create", { idle_timeout_seconds: -1 });
    expect(explained.code).toBe("request.malformed");
    expect(stepOf(explained, "args.schema").verdict).toBe("deny");
    expect(codeOf(await (await replica.client(ws)).createSession({ idle_timeout_seconds: -1 }))).toBe(
      explained.code,
    );
  });

  it("denies at the concurrent-session limit with quota.concurrent_sessions, as the call is", async () => {
    const ws = freshWorkspace("slots");
    await setPolicy(ws, { maxConcurrentSessions: 1 });
    const client = await replica.client(ws);
    await sessionOf(client);
    const explained = await explainUntouched(ws, "sessions.create", {});
    expect(explained.code).toBe("quota.concurrent_sessions");
    expect(stepOf(explained, "quota.concurrent_sessions")).toMatchObject({
      verdict: "deny",
      field: "maxConcurrentSessions",
      value: 1,
      limit: 1,
    });
    const answer = await client.createSession();
    expect(answer.status).toBe(429);
    expect(codeOf(answer)).toBe(explained.code);
  });

  it("denies past the session rate with quota.session_rate, as the call is", async () => {
    const ws = freshWorkspace("rate");
    await setPolicy(ws, { sessionsPerMinute: 1 });
    const client = await replica.client(ws);
    const first = await sessionOf(client);
    expect((await client.destroy(first)).status).toBe(204);
    const explained = await explainUntouched(ws, "sessions.create", {});
    expect(explained.code).toBe("quota.session_rate");
    expect(stepOf(explained, "quota.session_rate")).toMatchObject({ value: 1, limit: 1 });
    expect(stepOf(explained, "quota.concurrent_sessions").verdict).toBe("pass");
    expect(codeOf(await client.createSession())).toBe(explained.code);
  });

  it("denies once the day's budget is spent with quota.exec_budget, for create and for exec, as the calls are", async () => {
    const ws = freshWorkspace("budget");
    await setPolicy(ws, { execSecondsPerDay: 2 });
    const client = await replica.client(ws);
    const session = await sessionOf(client);
    // The day's budget spent, as calls would have spent it.
    await replica.store.reserveBudget(ws, budgetDay(Date.now()), 2_000, 2_000);
    const create = await explainUntouched(ws, "sessions.create", {});
    expect(create.code).toBe("quota.exec_budget");
    expect(stepOf(create, "quota.exec_budget")).toMatchObject({
      field: "execSecondsPerDay",
      value: 2,
      limit: 2,
    });
    const exec = await explainUntouched(ws, "sessions.exec", {
      session_id: session,
      tool: "bash_code_execution",
      input: { command: "true" },
    });
    expect(exec.code).toBe("quota.exec_budget");
    expect(exec.effective.timeoutSeconds).toBeNull();
    expect(codeOf(await client.createSession())).toBe(create.code);
    expect(
      codeOf(await client.exec(session, { tool: "bash_code_execution", input: { command: "true" } })),
    ).toBe(exec.code);
  });
});

describe("explain of calls on a session", () => {
  it("allows an Execute within the policy, with the timeout it would run under, and the call runs", async () => {
    const ws = freshWorkspace("exec");
    await setPolicy(ws, { execTimeoutCeilingSeconds: 20 });
    const client = await replica.client(ws);
    const session = await sessionOf(client);
    const args = {
      session_id: session,
      tool: "bash_code_execution",
      input: { command: "echo hi" },
      timeout_seconds: 90,
    };
    const explained = await explainUntouched(ws, "sessions.exec", args);
    expect(explained).toMatchObject({ decision: "allow", code: null });
    expect(explained.steps.map((step) => step.step)).toEqual([
      "mounted",
      "resolve",
      "args",
      "policy",
      "policy",
      "policy",
      "admit",
    ]);
    expect(stepOf(explained, "exec.timeout")).toMatchObject({ value: 20, limit: 20 });
    expect(explained.effective.timeoutSeconds).toBe(20);
    const ran = await client.exec(session, {
      tool: "bash_code_execution",
      input: { command: "echo hi" },
      timeout_seconds: 90,
    });
    expect(ran.status, ran.text).toBe(200);
  });

  it("puts a malformed Execute before a disabled workspace, as the pipeline does", async () => {
    const ws = freshWorkspace("malformed");
    const client = await replica.client(ws);
    const session = await sessionOf(client);
    await setPolicy(ws, { enabled: false });
    const body = { tool: "bash_code_execution", input: {} };
    const explained = await explainUntouched(ws, "sessions.exec", { session_id: session, ...body });
    expect(explained.code).toBe("request.malformed");
    expect(stepOf(explained, "workspace.enabled")).toMatchObject({ verdict: "deny" });
    const answer = await client.exec(session, body);
    expect(answer.status).toBe(422);
    expect(codeOf(answer)).toBe(explained.code);
  });

  it("denies a tool that is not allowed with policy.tool_not_allowed, as the call is", async () => {
    const ws = freshWorkspace("tool");
    await setPolicy(ws, { allowedTools: ["bash_code_execution"] });
    const client = await replica.client(ws);
    const session = await sessionOf(client);
    const explained = await explainUntouched(ws, "sessions.exec", {
      session_id: session,
      tool: "code_execution",
      input: { code: "print(1)" },
    });
    expect(explained.code).toBe("policy.tool_not_allowed");
    expect(stepOf(explained, "tool.allowed")).toMatchObject({
      verdict: "deny",
      field: "allowedTools",
      value: ["bash_code_execution"],
    });
    const answer = await client.exec(session, { tool: "code_execution", input: { code: "print(1)" } });
    expect(answer.status).toBe(403);
    expect(codeOf(answer)).toBe(explained.code);
  });

  it("denies an unknown session with session.not_found before anything else, as the calls are", async () => {
    const ws = freshWorkspace("unknown");
    await setPolicy(ws, { enabled: false });
    const client = await replica.client(ws);
    for (const operation of ["sessions.exec", "sessions.get", "files.list", "files.get", "files.put"]) {
      const explained = await explainUntouched(ws, operation, {
        session_id: "no-such-session",
        tool: "nope",
      });
      expect(explained.code, operation).toBe("session.not_found");
      expect(explained.steps[1]).toMatchObject({ step: "resolve", verdict: "deny" });
    }
    expect(codeOf(await client.exec("no-such-session", { tool: "nope", input: {} }))).toBe(
      "session.not_found",
    );
    expect(codeOf(await client.getSession("no-such-session"))).toBe("session.not_found");
    expect(codeOf(await client.listFiles("no-such-session"))).toBe("session.not_found");
  });

  it("another workspace's session is the same session.not_found", async () => {
    const owner = freshWorkspace("owner");
    const session = await sessionOf(await replica.client(owner));
    const explained = await explainUntouched(freshWorkspace("other"), "sessions.get", {
      session_id: session,
    });
    expect(explained.code).toBe("session.not_found");
    const mine = await explainUntouched(owner, "sessions.get", { session_id: session });
    expect(mine.code).toBeNull();
  });

  it("DestroySession is always allowed: 204 whether or not the session exists", async () => {
    const ws = freshWorkspace("destroy");
    const explained = await explainUntouched(ws, "sessions.delete", { session_id: "no-such-session" });
    expect(explained).toMatchObject({ decision: "allow", code: null });
    expect((await (await replica.client(ws)).destroy("no-such-session")).status).toBe(204);
  });
});

describe("explain's own bad input", () => {
  it("answers 422 listing every problem: workspace, operation, args", async () => {
    const cases: [unknown, RegExp][] = [
      [{ workspace: "-bad", operation: "sessions.create" }, /^workspace:/],
      [{ workspace: "ok", operation: "sessions.nope" }, /unknown operation 'sessions\.nope'/],
      [{ workspace: "ok", operation: "admin.policy.get" }, /explain covers the contract operations/],
      [{ workspace: "ok", operation: "sessions.create", args: [1] }, /^args:/],
      [{ workspace: "ok", operation: "sessions.exec", args: {} }, /^args\.session_id:/],
      [{ workspace: "ok", operation: "sessions.create", extra: 1 }, /^extra: unknown field/],
    ];
    for (const [body, problem] of cases) {
      const answer = await adminRequest(replica.url, adminToken, "POST", "/explain", { body });
      expect(answer.status, JSON.stringify(body)).toBe(422);
      const detail = (answer.body as { detail: { code: string; problems: string[] } }).detail;
      expect(detail.code).toBe("request.malformed");
      expect(
        detail.problems.some((entry) => problem.test(entry)),
        detail.problems.join("; "),
      ).toBe(true);
    }
    const all = await adminRequest(replica.url, adminToken, "POST", "/explain", { body: { args: "x" } });
    expect((all.body as { detail: { problems: string[] } }).detail.problems).toHaveLength(3);
  });

  it("is for admin tokens only: 401 without one, 403 for a workspace token", async () => {
    const body = { workspace: "ok", operation: "sessions.create" };
    expect(
      (await adminRequest(replica.url, adminToken, "POST", "/explain", { body, token: null })).status,
    ).toBe(401);
    const workspaceToken = await mintToken({ secret: TEST_SECRET, workspace: "ok", ttlSeconds: 600 });
    expect((await adminRequest(replica.url, workspaceToken, "POST", "/explain", { body })).status).toBe(403);
  });
});
