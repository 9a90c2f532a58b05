/**
 * The admin API (`/admin/v1`; docs/architecture.md, "Policy") on a real dev gateway: 401
 * without a valid token, 403 for an ordinary token, admin tokens scoped to no workspace
 * refused on contract routes, policy read/edit/delete with its audit trail, 422 listing every
 * problem above a ceiling, edits in force on the very next CreateSession (no manual
 * invalidation), usage and pools, and the documented shape of every answer.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { type AdminRequestOptions, adminRequest } from "../../support/admin-api.js";
import type { Answer } from "../../support/contract-client.js";
import {
  startTestGateway,
  TEST_IMAGE,
  TEST_SECRET,
  type TestGateway,
  testAdminToken,
} from "../../support/gateway-harness.js";

let harness: TestGateway;
let adminToken: string;
beforeAll(async () => {
  harness = await startTestGateway({
    policy: {
      allowedImages: [TEST_IMAGE],
      defaultImage: TEST_IMAGE,
      maxConcurrentSessions: 5,
      sessionsPerMinute: 100,
      execTimeoutCeilingSeconds: 120,
    },
    pools: [{ name: "default", image: TEST_IMAGE, minIdle: 1, maxTotal: 6 }],
  });
  adminToken = await testAdminToken("alice");
});
afterAll(() => harness?.close());

const freshWorkspace = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

/** The admin API of the test's gateway, with its admin token unless told otherwise. */
const api = (method: string, path: string, options?: AdminRequestOptions) =>
  adminRequest(harness.url, adminToken, method, path, options);

function expectError(answer: Answer, status: number, code: string): void {
  expect(answer.status, answer.text).toBe(status);
  const { message, problems } = (answer.body as { detail: { message: string; problems?: string[] } }).detail;
  // A refused input lists its problems as well; nothing else rides along.
  expect(answer.body).toEqual({
    detail: {
      code,
      message: expect.any(String),
      ...(code === "request.malformed" ? { problems: expect.any(Array) } : {}),
    },
  });
  if (problems !== undefined) expect(problems.join("; ")).toBe(message);
}

const policyFields = [
  "enabled",
  "allowedImages",
  "defaultImage",
  "allowedTools",
  "execTimeoutCeilingSeconds",
  "idleTimeoutCeilingSeconds",
  "maxLifetimeCeilingSeconds",
  "maxConcurrentSessions",
  "sessionsPerMinute",
  "execSecondsPerDay",
  "maxFileBytes",
  "resourceClass",
  "isolation",
  "egressAllowed",
  "egressAllowCidrs",
  "egressAllowHosts",
  "sandboxReuse",
  "hibernateAfterIdleSeconds",
  "maxHibernatedSessions",
];
const effectiveFields = [
  ...policyFields,
  "defaultExecTimeoutSeconds",
  "defaultIdleTimeoutSeconds",
  "defaultMaxLifetimeSeconds",
];
const isoDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** A policy row as the admin API documents it. */
function expectRow(row: unknown, workspace: string): void {
  expect(Object.keys(row as object).sort()).toEqual(
    [...policyFields, "workspaceId", "version", "updatedAt", "updatedBy"].sort(),
  );
  expect(row).toMatchObject({
    workspaceId: workspace,
    enabled: expect.any(Boolean),
    version: expect.any(Number),
    updatedAt: expect.stringMatching(isoDate),
    updatedBy: expect.any(String),
  });
}

interface View {
  workspace: string;
  configured: boolean;
  row: Record<string, unknown> | null;
  effective: Record<string, unknown>;
  sources: Record<string, string>;
}

/** A PolicyView as the admin API documents it. */
function expectView(answer: Answer, workspace: string): View {
  expect(answer.status, answer.text).toBe(200);
  const view = answer.body as View;
  expect(Object.keys(view).sort()).toEqual(["configured", "effective", "row", "sources", "workspace"]);
  expect(view.workspace).toBe(workspace);
  expect(Object.keys(view.effective).sort()).toEqual([...effectiveFields, "workspace", "configured"].sort());
  expect(view.effective.workspace).toBe(workspace);
  expect(view.effective.configured).toBe(view.configured);
  expect(Object.keys(view.sources).sort()).toEqual([...effectiveFields].sort());
  for (const source of Object.values(view.sources)) expect(["deployment", "workspace"]).toContain(source);
  if (view.configured) expectRow(view.row, workspace);
  else expect(view.row).toBeNull();
  return view;
}

describe("authentication and authorization", () => {
  it("answers 401 without a token or with a bad one, before any route lookup", async () => {
    for (const path of [
      "/workspaces",
      "/workspaces/x/policy",
      "/pools",
      "/sessions",
      "/keys",
      "/no-such-route",
    ]) {
      const missing = await api("GET", path, { token: null });
      expectError(missing, 401, "auth.missing");
      expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="sandpool"');
      expectError(await api("GET", path, { token: "not-a-jwt" }), 401, "auth.invalid");
    }
    expectError(await api("PUT", "/workspaces/x/policy", { token: null, body: {} }), 401, "auth.missing");
  });

  it("answers 403 auth.forbidden to a valid token that is not an admin token", async () => {
    const token = await harness.token("tenant-a");
    for (const [method, path] of [
      ["GET", "/workspaces"],
      ["GET", "/workspaces/tenant-a/policy"],
      ["DELETE", "/workspaces/tenant-a/policy"],
      ["GET", "/workspaces/tenant-a/audit"],
      ["GET", "/workspaces/tenant-a/usage"],
      ["GET", "/pools"],
      ["PATCH", "/pools/default"],
      ["GET", "/sessions"],
      ["DELETE", "/sessions/any-session"],
      ["POST", "/keys"],
      ["GET", "/keys"],
      ["DELETE", "/keys/0123456789ab"],
      ["GET", "/no-such-route"],
    ] as const) {
      expectError(await api(method, path, { token }), 403, "auth.forbidden");
    }
    const put = await api("PUT", "/workspaces/tenant-a/policy", { token, body: { enabled: false } });
    expectError(put, 403, "auth.forbidden");
    expect((await api("GET", "/workspaces/tenant-a/policy")).body).toMatchObject({ configured: false });
  });

  it("does not treat an admin claim other than true as admin", async () => {
    const { SignJWT } = await import("jose");
    const now = Math.floor(Date.now() / 1000);
    for (const value of ["true", 1, { yes: true }]) {
      const token = await new SignJWT({ workspace_id: "tenant-a", sandpool_admin: value })
        .setProtectedHeader({ alg: "HS256" })
        .setExpirationTime(now + 60)
        .sign(new TextEncoder().encode(TEST_SECRET));
      expectError(await api("GET", "/workspaces", { token }), 403, "auth.forbidden");
    }
  });

  it("refuses an admin token without a workspace on contract routes (401, fail closed)", async () => {
    const star = await mintToken({ secret: TEST_SECRET, admin: true, workspace: "*" });
    for (const token of [adminToken, star]) {
      expect((await api("GET", "/pools", { token })).status).toBe(200);
      const res = await fetch(`${harness.url}/sessions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(401);
      // Still 401 (fail closed), but the holder is told where an admin token goes.
      expect(await res.json()).toEqual({
        detail: {
          code: "auth.invalid",
          message:
            "this token names no workspace: an admin token is for the admin API (/admin/v1); " +
            "contract routes need a token for one workspace",
        },
      });
      const other = await fetch(`${harness.url}/sessions/abc`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(other.status).toBe(401);
    }
  });

  it("lets an admin token that names a workspace use that workspace's contract routes", async () => {
    const workspace = freshWorkspace("admin-scoped");
    const token = await mintToken({ secret: TEST_SECRET, admin: true, workspace });
    const res = await fetch(`${harness.url}/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(201);
    const { session_id } = (await res.json()) as { session_id: string };
    await fetch(`${harness.url}/sessions/${session_id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
  });

  it("answers 404 on an unknown admin route and refuses a malformed workspace id", async () => {
    expectError(await api("GET", "/no-such-route"), 404, "request.not_found");
    expectError(await api("GET", "/workspaces/a/nothing-here"), 404, "request.not_found");
    expectError(await api("GET", "/workspaces/-bad/policy"), 422, "request.malformed");
    expectError(await api("GET", `/workspaces/${"a".repeat(129)}/policy`), 422, "request.malformed");
    expectError(await api("PUT", "/workspaces/a%20b/policy", { body: {} }), 422, "request.malformed");
  });
});

describe("wrong method on an admin path", () => {
  it("answers 405 with the path's methods in Allow, from the registry", async () => {
    for (const [method, path, allow] of [
      ["POST", "/workspaces", "GET"],
      ["PATCH", "/workspaces/tenant-a/policy", "GET, PUT, DELETE"],
      ["GET", "/nodes/n1/drain", "POST"],
      ["PUT", "/pools/default", "PATCH"],
      ["POST", "/keys/abc", "DELETE"],
    ] as const) {
      const answer = await api(method, path);
      expectError(answer, 405, "request.method_not_allowed");
      expect(answer.headers.get("allow"), `${method} ${path}`).toBe(allow);
    }
  });

  it("answers 401 and 403 before 405", async () => {
    expect((await api("POST", "/workspaces", { token: null })).status).toBe(401);
    const forbidden = await api("POST", "/workspaces", { token: await harness.token("tenant-a") });
    expectError(forbidden, 403, "auth.forbidden");
  });
});

describe("policy", () => {
  it("shows the deployment defaults for a workspace without a row", async () => {
    const workspace = freshWorkspace("unconfigured");
    const view = expectView(await api("GET", `/workspaces/${workspace}/policy`), workspace);
    expect(view.configured).toBe(false);
    expect(view.effective).toMatchObject({
      enabled: true,
      allowedImages: [TEST_IMAGE],
      defaultImage: TEST_IMAGE,
      maxConcurrentSessions: 5,
      execTimeoutCeilingSeconds: 120,
    });
    expect(new Set(Object.values(view.sources))).toEqual(new Set(["deployment"]));
  });

  it("creates, edits, clears and deletes a row, auditing each edit with its actor", async () => {
    const workspace = freshWorkspace("edit");
    const created = expectView(
      await api("PUT", `/workspaces/${workspace}/policy`, {
        body: { maxConcurrentSessions: 3, allowedTools: ["code_execution"], execTimeoutCeilingSeconds: 30 },
      }),
      workspace,
    );
    expect(created.configured).toBe(true);
    expect(created.row).toMatchObject({
      version: 1,
      updatedBy: "alice",
      maxConcurrentSessions: 3,
      allowedTools: ["code_execution"],
      sessionsPerMinute: null,
    });
    expect(created.effective).toMatchObject({
      maxConcurrentSessions: 3,
      allowedTools: ["code_execution"],
      execTimeoutCeilingSeconds: 30,
      defaultExecTimeoutSeconds: 30,
      sessionsPerMinute: 100,
    });
    expect(created.sources).toMatchObject({
      maxConcurrentSessions: "workspace",
      allowedTools: "workspace",
      execTimeoutCeilingSeconds: "workspace",
      defaultExecTimeoutSeconds: "workspace",
      sessionsPerMinute: "deployment",
      allowedImages: "deployment",
    });

    // Only the fields given change; null clears a narrowing.
    const edited = expectView(
      await api("PUT", `/workspaces/${workspace}/policy`, {
        body: { sessionsPerMinute: 7, maxConcurrentSessions: null },
      }),
      workspace,
    );
    expect(edited.row).toMatchObject({
      version: 2,
      sessionsPerMinute: 7,
      maxConcurrentSessions: null,
      allowedTools: ["code_execution"],
    });
    expect(edited.effective).toMatchObject({ sessionsPerMinute: 7, maxConcurrentSessions: 5 });
    expect(edited.sources).toMatchObject({
      sessionsPerMinute: "workspace",
      maxConcurrentSessions: "deployment",
    });

    const list = await api("GET", "/workspaces");
    expect(list.status).toBe(200);
    expect(Object.keys(list.body as object)).toEqual(["workspaces"]);
    const rows = (list.body as { workspaces: { workspaceId: string }[] }).workspaces;
    const mine = rows.find((row) => row.workspaceId === workspace);
    expectRow(mine, workspace);

    const get = expectView(await api("GET", `/workspaces/${workspace}/policy`), workspace);
    expect(get).toEqual(edited);

    // An admin token without a subject is audited as "admin".
    const anonymousAdmin = await mintToken({ secret: TEST_SECRET, admin: true });
    const deleted = await api("DELETE", `/workspaces/${workspace}/policy`, { token: anonymousAdmin });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe("");
    expect(expectView(await api("GET", `/workspaces/${workspace}/policy`), workspace).configured).toBe(false);
    // Deleting what is not there is not an error (and audits nothing).
    expect((await api("DELETE", `/workspaces/${workspace}/policy`)).status).toBe(204);

    const audit = await api("GET", `/workspaces/${workspace}/audit`);
    expect(audit.status).toBe(200);
    const { entries, ...rest } = audit.body as { workspace: string; entries: Record<string, unknown>[] };
    expect(rest).toEqual({ workspace });
    expect(entries.map((e) => e.actor)).toEqual(["admin", "alice", "alice"]);
    for (const entry of entries) {
      expect(Object.keys(entry).sort()).toEqual(["actor", "after", "at", "before", "id", "workspaceId"]);
      expect(entry).toMatchObject({
        id: expect.any(Number),
        workspaceId: workspace,
        at: expect.stringMatching(isoDate),
      });
    }
    const [deletion, edit, creation] = entries;
    expect(deletion).toMatchObject({ before: { version: 2, sessionsPerMinute: 7 }, after: null });
    expect(edit).toMatchObject({
      before: { version: 1, maxConcurrentSessions: 3, sessionsPerMinute: null },
      after: { version: 2, maxConcurrentSessions: null, sessionsPerMinute: 7 },
    });
    expect(creation).toMatchObject({ before: null, after: { version: 1, maxConcurrentSessions: 3 } });

    const limited = await api("GET", `/workspaces/${workspace}/audit?limit=1`);
    expect((limited.body as { entries: unknown[] }).entries).toEqual([deletion]);
    expectError(await api("GET", `/workspaces/${workspace}/audit?limit=0`), 422, "request.malformed");
    expectError(await api("GET", `/workspaces/${workspace}/audit?limit=abc`), 422, "request.malformed");
  });

  it("refuses values above the deployment's ceilings with 422 listing every problem, writing nothing", async () => {
    const workspace = freshWorkspace("ceiling");
    const answer = await api("PUT", `/workspaces/${workspace}/policy`, {
      body: {
        maxConcurrentSessions: 50,
        execTimeoutCeilingSeconds: 1000,
        allowedImages: ["evil/image:latest"],
        resourceClass: "huge",
      },
    });
    expect(answer.status, answer.text).toBe(422);
    const detail = (answer.body as { detail: { code: string; message: string; problems: string[] } }).detail;
    expect(Object.keys(detail).sort()).toEqual(["code", "message", "problems"]);
    expect(detail.code).toBe("request.malformed");
    expect(detail.problems).toEqual([
      "execTimeoutCeilingSeconds: 1000 is above the deployment ceiling of 120",
      "maxConcurrentSessions: 50 is above the deployment ceiling of 5",
      "allowedImages: 'evil/image:latest' is not allowed by the deployment",
      "resourceClass: 'huge' has no pool (known: standard)",
    ]);
    expect(expectView(await api("GET", `/workspaces/${workspace}/policy`), workspace).configured).toBe(false);
    expect((await api("GET", `/workspaces/${workspace}/audit`)).body).toEqual({ workspace, entries: [] });
  });

  it("edits the egress allow-lists: host patterns are checked, a range must lie inside the deployment's", async () => {
    const workspace = freshWorkspace("egress");
    const hosts = ["pypi.org", "*.pythonhosted.org"];
    const edited = await api("PUT", `/workspaces/${workspace}/policy`, { body: { egressAllowHosts: hosts } });
    expect(edited.status, edited.text).toBe(200);
    const view = expectView(edited, workspace);
    expect(view.effective).toMatchObject({ egressAllowHosts: hosts, egressAllowCidrs: [] });
    expect(view.sources).toMatchObject({ egressAllowHosts: "workspace", egressAllowCidrs: "deployment" });

    const refused = await api("PUT", `/workspaces/${workspace}/policy`, {
      body: { egressAllowCidrs: ["10.1.0.0/16", "nonsense"], egressAllowHosts: ["bad host"] },
    });
    expect(refused.status).toBe(422);
    const problems = (refused.body as { detail: { problems: string[] } }).detail.problems;
    expect(problems.join("\n")).toMatch(/egressAllowCidrs\.1: 'nonsense' is not a CIDR range/);
    expect(problems.join("\n")).toMatch(/egressAllowHosts\.0: 'bad host' is not a host name/);

    const outside = await api("PUT", `/workspaces/${workspace}/policy`, {
      body: { egressAllowCidrs: ["10.1.0.0/16"] },
    });
    expect(outside.status).toBe(422);
    expect((outside.body as { detail: { problems: string[] } }).detail.problems).toEqual([
      "egressAllowCidrs: '10.1.0.0/16' is not within the deployment's egressAllowCidrs (none)",
    ]);
  });

  it("refuses malformed edits", async () => {
    const workspace = freshWorkspace("malformed");
    const unknown = await api("PUT", `/workspaces/${workspace}/policy`, { body: { maxSessions: 3 } });
    expect(unknown.status).toBe(422);
    expect((unknown.body as { detail: { problems: string[] } }).detail.problems).toHaveLength(1);
    const typed = await api("PUT", `/workspaces/${workspace}/policy`, {
      body: { maxConcurrentSessions: "3", enabled: "no" },
    });
    expect((typed.body as { detail: { problems: string[] } }).detail.problems).toHaveLength(2);
    expectError(
      await api("PUT", `/workspaces/${workspace}/policy`, { rawBody: "{" }),
      400,
      "request.bad_json",
    );
    expectError(
      await api("PUT", `/workspaces/${workspace}/policy`, { rawBody: "{}", contentType: "text/plain" }),
      415,
      "request.bad_content_type",
    );
    expect((await api("PUT", `/workspaces/${workspace}/policy`, { rawBody: "[]" })).body).toEqual({
      detail: {
        code: "request.malformed",
        message: "body: Invalid input: expected object, received array",
        problems: ["body: Invalid input: expected object, received array"],
      },
    });
    expect(expectView(await api("GET", `/workspaces/${workspace}/policy`), workspace).configured).toBe(false);
  });

  it("puts an edit in force on the very next CreateSession, with no manual invalidation", async () => {
    const workspace = freshWorkspace("in-force");
    const client = await harness.client(workspace);
    // Cached by a first session: the edit must displace the cached policy.
    const first = await client.createSession();
    expect(first.status, first.text).toBe(201);
    const firstId = (first.body as { session_id: string }).session_id;

    expect((await api("PUT", `/workspaces/${workspace}/policy`, { body: { enabled: false } })).status).toBe(
      200,
    );
    const refused = await client.createSession();
    expect(refused.status, refused.text).toBe(403);
    expect((refused.body as { detail: { code: string } }).detail.code).toBe("policy.workspace_disabled");

    expect(
      (
        await api("PUT", `/workspaces/${workspace}/policy`, {
          body: { enabled: true, maxConcurrentSessions: 1 },
        })
      ).status,
    ).toBe(200);
    const capped = await client.createSession();
    expect(capped.status, capped.text).toBe(429);
    expect((capped.body as { detail: { code: string } }).detail.code).toBe("quota.concurrent_sessions");

    expect((await api("DELETE", `/workspaces/${workspace}/policy`)).status).toBe(204);
    const second = await client.createSession();
    expect(second.status, second.text).toBe(201);
    await client.destroy((second.body as { session_id: string }).session_id);
    await client.destroy(firstId);
  });
});

describe("usage and pools", () => {
  it("reports a workspace's usage over the last 24 hours by default, and over a given window", async () => {
    const workspace = freshWorkspace("usage");
    const client = await harness.client(workspace);
    const created = await client.createSession();
    const id = (created.body as { session_id: string }).session_id;
    const exec = await client.exec(id, { tool: "code_execution", input: { code: "print(1)" } });
    expect(exec.status, exec.text).toBe(200);
    await client.destroy(id);

    const answer = await api("GET", `/workspaces/${workspace}/usage`);
    expect(answer.status, answer.text).toBe(200);
    const body = answer.body as {
      workspace: string;
      from: string;
      to: string;
      usage: Record<string, unknown>[];
    };
    expect(Object.keys(body).sort()).toEqual(["from", "to", "usage", "workspace"]);
    expect(body.workspace).toBe(workspace);
    expect(Date.parse(body.to) - Date.parse(body.from)).toBe(24 * 3600 * 1000);
    expect(Math.abs(Date.parse(body.to) - Date.now())).toBeLessThan(60_000);
    for (const row of body.usage) {
      expect(Object.keys(row).sort()).toEqual(["count", "kind", "quantity", "tool"]);
    }
    const kinds = body.usage.map((row) => row.kind);
    expect(kinds).toEqual(expect.arrayContaining(["session_created", "exec", "session_ended"]));
    expect(body.usage.find((row) => row.kind === "exec")).toMatchObject({ tool: "code_execution", count: 1 });

    const past = await api(
      "GET",
      `/workspaces/${workspace}/usage?from=2020-01-01&to=${encodeURIComponent("2020-01-02T00:00:00Z")}`,
    );
    expect(past.body).toEqual({
      workspace,
      from: "2020-01-01T00:00:00.000Z",
      to: "2020-01-02T00:00:00.000Z",
      usage: [],
    });
    expectError(await api("GET", `/workspaces/${workspace}/usage?from=yesterday`), 422, "request.malformed");
    expectError(
      await api("GET", `/workspaces/${workspace}/usage?from=2020-01-02&to=2020-01-01`),
      422,
      "request.malformed",
    );
    // Found by the fuzz suite: a year Postgres cannot hold was a 500, not the caller's 422.
    for (const query of [
      "to=0000-01-01",
      "from=0001-01-01&to=0001-01-02",
      "from=1969-12-31",
      "to=9999-12-31T23:59:59-14:00",
    ]) {
      expectError(await api("GET", `/workspaces/${workspace}/usage?${query}`), 422, "request.malformed");
    }
    expect((await api("GET", `/workspaces/${workspace}/usage?to=1970-01-01`)).status).toBe(200);
  });

  it("lists every pool with its spec and its idle and member counts (more in admin-sessions-pools.test.ts)", async () => {
    const answer = await api("GET", "/pools");
    expect(answer.status, answer.text).toBe(200);
    expect(Object.keys(answer.body as object)).toEqual(["items", "serverErrors"]);
    const pools = (answer.body as { items: Record<string, unknown>[] }).items;
    expect(pools).toHaveLength(1);
    // The spec as configured (whatever fields PoolSpec has), plus the two counts.
    expect(pools[0]).toMatchObject({
      name: "default",
      image: TEST_IMAGE,
      resourceClass: "standard",
      minIdle: 1,
      maxTotal: 6,
      warmupConcurrency: expect.any(Number),
      coldStartTimeoutMs: expect.any(Number),
      idle: expect.any(Number),
      members: expect.any(Number),
    });
    const pool = pools[0] as { idle: number; members: number };
    expect(pool.idle).toBe((await harness.store.listIdle("default")).length);
    expect(pool.members).toBeGreaterThanOrEqual(pool.idle);
  });
});
