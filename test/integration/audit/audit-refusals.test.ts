/**
 * Refused contract calls are audited (pipeline step 10), on a real dev gateway: every kind of
 * refusal after authentication (policy, quota, unknown session, an upload over the file cap) is listed by
 * `GET /admin/v1/audit?kind=denied` within two seconds, newest first, with its operation,
 * code, time and principal; one workspace's refusals never show in another's list; calls
 * refused before authentication, and calls that were not refusals, leave nothing; identical
 * refusals in a burst are one item with their count; `kind=admin` lists operators' changes.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import type { AuditItem, DeniedItem } from "../../../src/store/sql/audit-repository.js";
import type { EditablePolicyFields } from "../../../src/store/sql/policy-row.js";
import { adminApi } from "../../support/admin-api.js";
import type { Answer } from "../../support/contract-client.js";
import {
  startTestGateway,
  TEST_IMAGE,
  TEST_SECRET,
  type TestGateway,
  testAdminToken,
} from "../../support/gateway-harness.js";
import { waitFor } from "../../support/wait-for.js";

let harness: TestGateway;
let api: ReturnType<typeof adminApi>;
beforeAll(async () => {
  harness = await startTestGateway({
    pools: [{ name: "default", image: TEST_IMAGE, minIdle: 1, maxTotal: 6 }],
  });
  api = adminApi(harness.url, await testAdminToken());
});
afterAll(() => harness?.close());

const freshWorkspace = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

async function setPolicy(workspace: string, fields: Partial<EditablePolicyFields>): Promise<void> {
  await harness.gateway.policyRepository.put(workspace, fields, "audit-test");
  harness.gateway.services.policies.invalidate(workspace);
}

function expectCode(answer: Answer, status: number, code: string): void {
  expect(answer.status, answer.text).toBe(status);
  expect((answer.body as { detail: { code: string } }).detail.code).toBe(code);
}

async function denied(workspace: string): Promise<DeniedItem[]> {
  const answer = await api("GET", `/audit?workspace=${workspace}&kind=denied`);
  expect(answer.status, answer.text).toBe(200);
  expect(Object.keys(answer.body as object)).toEqual(["items"]);
  return (answer.body as { items: DeniedItem[] }).items;
}

/** Waits (two seconds at most: the promise) until the workspace's denied list has `count` items. */
async function deniedSoon(workspace: string, count: number): Promise<DeniedItem[]> {
  let items: DeniedItem[] = [];
  await waitFor(async () => {
    items = await denied(workspace);
    return items.length >= count;
  }, 2_000);
  return items;
}

const isoDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe("audit of refused calls", () => {
  it("records each refusal kind with operation, code, time and principal, newest first", async () => {
    const workspace = freshWorkspace("refusals");
    const client = (await harness.client(workspace)).withToken(
      await mintToken({ secret: TEST_SECRET, workspace, subject: "alice" }),
    );
    const started = Date.now();

    expectCode(await client.createSession({ image: "not/allowed:1" }), 403, "policy.image_not_allowed");
    expectCode(
      await client.exec("no-such-session", { tool: "code_execution", input: { code: "1" } }),
      404,
      "session.not_found",
    );
    const created = await client.createSession({});
    expect(created.status, created.text).toBe(201);
    const sessionId = (created.body as { session_id: string }).session_id;
    await setPolicy(workspace, { allowedTools: ["code_execution"] });
    expectCode(
      await client.exec(sessionId, { tool: "bash_code_execution", input: { command: "true" } }),
      403,
      "policy.tool_not_allowed",
    );
    await setPolicy(workspace, { allowedTools: ["code_execution"], maxConcurrentSessions: 1 });
    expectCode(await client.createSession({}), 429, "quota.concurrent_sessions");
    await setPolicy(workspace, { enabled: false });
    expectCode(
      await client.exec(sessionId, { tool: "code_execution", input: { code: "1" } }),
      403,
      "policy.workspace_disabled",
    );

    const items = await deniedSoon(workspace, 5);
    expect(items.map((item) => [item.operation, item.code])).toEqual([
      ["sessions.exec", "policy.workspace_disabled"],
      ["sessions.create", "quota.concurrent_sessions"],
      ["sessions.exec", "policy.tool_not_allowed"],
      ["sessions.exec", "session.not_found"],
      ["sessions.create", "policy.image_not_allowed"],
    ]);
    for (const item of items) {
      expect(item).toMatchObject({ kind: "denied", workspace, count: 1 });
      expect(item.at).toMatch(isoDate);
      expect(Date.parse(item.at)).toBeGreaterThanOrEqual(started - 1_000);
      expect(item.principal).toBe("alice");
    }
    expect(items[0]!.sessionId).toBe(sessionId);
    expect(items[1]!.sessionId).toBeNull();
    expect(items[3]!.sessionId).toBe("no-such-session");
    expect(items[0]!.status).toBe(403);
  });

  it("records the session rate and the execution budget", async () => {
    const workspace = freshWorkspace("budget");
    const client = await harness.client(workspace);
    await setPolicy(workspace, { sessionsPerMinute: 1, execSecondsPerDay: 1 });
    const created = await client.createSession({});
    expect(created.status, created.text).toBe(201);
    const sessionId = (created.body as { session_id: string }).session_id;
    expectCode(await client.createSession({}), 429, "quota.session_rate");
    // A one-second budget is spent by a call that sleeps past it.
    await client.exec(sessionId, { tool: "code_execution", input: { code: "import time; time.sleep(1.2)" } });
    expectCode(
      await client.exec(sessionId, { tool: "code_execution", input: { code: "1" } }),
      429,
      "quota.exec_budget",
    );
    const items = await deniedSoon(workspace, 2);
    expect(items.map((item) => item.code)).toEqual(["quota.exec_budget", "quota.session_rate"]);
  });

  it("records an upload over the workspace's maxFileBytes, refused by the gateway or by the sandbox", async () => {
    const workspace = freshWorkspace("uploads");
    const client = await harness.client(workspace);
    const created = await client.createSession({});
    expect(created.status, created.text).toBe(201);
    const sessionId = (created.body as { session_id: string }).session_id;
    await setPolicy(workspace, { maxFileBytes: 1024 });
    // Far over the cap: the gateway refuses it on its Content-Length, before a byte is read.
    expectCode(
      await client.putFile(sessionId, "x".repeat(256 * 1024), { path: "big.txt" }),
      413,
      "file.too_large",
    );
    let items = await deniedSoon(workspace, 1);
    expect(items.map((item) => [item.operation, item.code, item.status])).toEqual([
      ["files.put", "file.too_large", 413],
    ]);
    expect(items[0]!.sessionId).toBe(sessionId);
    // Just over it, within the multipart framing allowance: the sandbox refuses it as it writes.
    expectCode(
      await client.putFile(sessionId, "x".repeat(2048), { path: "small.txt" }),
      413,
      "file.too_large",
    );
    await waitFor(
      async () => (await denied(workspace)).reduce((sum, item) => sum + item.count, 0) === 2,
      2_000,
    );
    items = await denied(workspace);
    expect(items.every((item) => item.operation === "files.put" && item.code === "file.too_large")).toBe(
      true,
    );
    // An upload within the cap is no refusal.
    expect((await client.putFile(sessionId, "x".repeat(512), { path: "ok.txt" })).status).toBe(201);
    await harness.gateway.services.usage.flush();
    expect((await denied(workspace)).reduce((sum, item) => sum + item.count, 0)).toBe(2);
  });

  it("keeps one workspace's refusals out of another's list, and an admin list without workspace has both", async () => {
    const a = freshWorkspace("tenant-a");
    const b = freshWorkspace("tenant-b");
    expectCode(await (await harness.client(a)).getSession("nope-a"), 404, "session.not_found");
    expectCode(await (await harness.client(b)).getSession("nope-b"), 404, "session.not_found");
    const onlyA = await deniedSoon(a, 1);
    expect(onlyA.map((item) => item.sessionId)).toEqual(["nope-a"]);
    expect((await deniedSoon(b, 1)).map((item) => item.sessionId)).toEqual(["nope-b"]);
    const all = await api("GET", "/audit?kind=denied&limit=1000");
    const workspaces = new Set((all.body as { items: AuditItem[] }).items.map((item) => item.workspace));
    expect(workspaces.has(a) && workspaces.has(b)).toBe(true);
  });

  it("merges a burst of identical refusals into one item with its count", async () => {
    const workspace = freshWorkspace("burst");
    const client = await harness.client(workspace);
    for (let i = 0; i < 5; i++) expectCode(await client.getSession("same-id"), 404, "session.not_found");
    await waitFor(async () => {
      const items = await denied(workspace);
      return items.reduce((sum, item) => sum + item.count, 0) === 5;
    }, 2_000);
    const items = await denied(workspace);
    // Within one flush they are one item; a flush in between splits them, never loses one.
    expect(items.length).toBeLessThanOrEqual(2);
  });

  it("leaves nothing for calls refused before authentication or that were not refusals", async () => {
    const workspace = freshWorkspace("quiet");
    const client = await harness.client(workspace);
    const anonymous = client.withToken(undefined);
    expect((await anonymous.getSession("x")).status).toBe(401);
    const badToken = client.withToken(
      await mintToken({ secret: "another-secret-of-at-least-thirty-two-b", workspace }),
    );
    expect((await badToken.getSession("x")).status).toBe(401);
    // Malformed input is the caller's mistake, not a refusal.
    expect((await client.createSession({ idle_timeout_seconds: "soon" })).status).toBe(422);
    const created = await client.createSession({});
    expect(created.status).toBe(201);
    await harness.gateway.services.usage.flush();
    expect(await denied(workspace)).toEqual([]);
  });

  it("lists operators' changes with kind=admin, newest first", async () => {
    const workspace = freshWorkspace("admin-trail");
    const put = await api("PUT", `/workspaces/${workspace}/policy`, { body: { maxConcurrentSessions: 2 } });
    expect(put.status, put.text).toBe(200);
    const del = await api("DELETE", `/workspaces/${workspace}/policy`);
    expect(del.status).toBe(204);
    const answer = await api("GET", `/audit?workspace=${workspace}&kind=admin`);
    expect(answer.status, answer.text).toBe(200);
    const items = (answer.body as { items: AuditItem[] }).items;
    expect(
      items.map((item) => (item.kind === "admin" ? [item.action, item.actor, item.target] : [])),
    ).toEqual([
      ["policy.edit", "ops", workspace],
      ["policy.edit", "ops", workspace],
    ]);
    expect(items[0]).toMatchObject({ detail: { after: null } });
  });

  it("refuses bad queries (422), workspace tokens (403) and no token (401)", async () => {
    for (const query of [
      "kind=everything",
      "limit=0",
      "limit=1001",
      "workspace=-bad",
      "since=yesterday",
      "since=2026-02-01&until=2026-01-01",
    ]) {
      const answer = await api("GET", `/audit?${query}`);
      expect(answer.status, `${query}: ${answer.text}`).toBe(422);
      expect((answer.body as { detail: { code: string } }).detail.code).toBe("request.malformed");
    }
    const workspaceToken = await harness.token(freshWorkspace("nosy"));
    expect((await api("GET", "/audit", { token: workspaceToken })).status).toBe(403);
    expect((await api("GET", "/audit", { token: null })).status).toBe(401);
  });
});

describe("audit of calls refused before their handler", () => {
  let narrow: TestGateway;
  beforeAll(async () => {
    narrow = await startTestGateway({
      pools: [{ name: "default", image: TEST_IMAGE, minIdle: 1, maxTotal: 2 }],
      limits: { maxCallsInFlightPerWorkspace: 1 },
    });
  });
  afterAll(() => narrow?.close());

  it("records quota.calls_in_flight with the operation it refused", async () => {
    const workspace = freshWorkspace("in-flight");
    const client = await narrow.client(workspace);
    const created = await client.createSession({});
    expect(created.status, created.text).toBe(201);
    const sessionId = (created.body as { session_id: string }).session_id;
    const slow = client.exec(sessionId, {
      tool: "code_execution",
      input: { code: "import time; time.sleep(1)" },
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expectCode(await client.listFiles(sessionId), 429, "quota.calls_in_flight");
    expect((await slow).status).toBe(200);
    const narrowApi = adminApi(narrow.url, await mintToken({ secret: TEST_SECRET, admin: true }));
    const answer = await narrowApi("GET", `/audit?workspace=${workspace}&kind=denied`);
    expect((answer.body as { items: DeniedItem[] }).items.map((item) => [item.operation, item.code])).toEqual(
      [["files.list", "quota.calls_in_flight"]],
    );
  });
});
