/**
 * Workspace API keys on a real dev gateway: created, listed and revoked through
 * `/admin/v1/keys` (shown once, listed without secret, audited), used as bearer tokens on the
 * contract exactly like a token of their workspace, never reaching another workspace's
 * sessions, refused at once when revoked or expired, and their last use recorded in batches.
 * Every keys route refuses an ordinary (workspace) token with 403, and a key too.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AdminRequestOptions, adminRequest } from "../../support/admin-api.js";
import { ContractClient } from "../../support/contract-client.js";
import {
  startTestGateway,
  TEST_SECRET,
  type TestGateway,
  testAdminToken,
} from "../../support/gateway-harness.js";

let harness: TestGateway;
let adminToken: string;
beforeAll(async () => {
  harness = await startTestGateway({
    auth: { jwtSecret: TEST_SECRET, apiKeyLastUsedFlushMs: 200 },
  });
  adminToken = await testAdminToken("alice");
});
afterAll(() => harness?.close());

const freshWorkspace = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

/** The admin API of the test's gateway, with its admin token unless told otherwise. */
const api = (method: string, path: string, options?: AdminRequestOptions) =>
  adminRequest(harness.url, adminToken, method, path, options);

interface CreatedKey {
  key: string;
  prefix: string;
  workspace: string;
  name: string | null;
  expiresAt: string | null;
}

async function createKey(workspace: string, extra: Record<string, unknown> = {}): Promise<CreatedKey> {
  const answer = await api("POST", "/keys", { body: { workspace, ...extra } });
  expect(answer.status, answer.text).toBe(201);
  return answer.body as CreatedKey;
}

describe("admin API: keys", () => {
  it("creates a key shown once, lists it without secret or hash, and audits it", async () => {
    const workspace = freshWorkspace("keys");
    const created = await createKey(workspace, { name: "ci", expiresInSeconds: 30 * 86_400 });
    expect(created.key).toMatch(new RegExp(`^sp_${created.prefix}_[A-Za-z0-9_-]{43}$`));
    expect(created).toMatchObject({
      workspace,
      name: "ci",
      revokedAt: null,
      lastUsedAt: null,
      createdBy: "alice",
    });
    expect(Date.parse(created.expiresAt!) - Date.now()).toBeGreaterThan(29 * 86_400_000);

    const listed = await api("GET", `/keys?workspace=${workspace}`);
    expect(listed.status).toBe(200);
    const items = (listed.body as { items: Record<string, unknown>[] }).items;
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ prefix: created.prefix, workspace, name: "ci" });
    const secret = created.key.split("_").slice(2).join("_");
    expect(listed.text).not.toContain(secret);
    expect(Object.keys(items[0]!)).not.toContain("key");
    expect(Object.keys(items[0]!)).not.toContain("hashedSecret");

    // The unfiltered list has it too; another workspace's filter does not.
    expect((await api("GET", "/keys")).text).toContain(created.prefix);
    expect((await api("GET", `/keys?workspace=${freshWorkspace("other")}`)).body).toEqual({ items: [] });

    expect(await harness.gateway.services.apiKeyAdmin!.audit(workspace)).toEqual([
      { prefix: created.prefix, action: "created", actor: "alice", at: expect.any(String) },
    ]);
  });

  it("refuses bad requests: a malformed workspace, an unknown field, a too short expiry, a bad prefix, an unknown prefix", async () => {
    for (const body of [
      { workspace: "../x" },
      { workspace: "ok", admin: true },
      { workspace: "ok", expiresInSeconds: 5 },
      { name: "no workspace" },
    ]) {
      const answer = await api("POST", "/keys", { body });
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect((answer.body as { detail: { code: string } }).detail.code).toBe("request.malformed");
    }
    expect((await api("DELETE", "/keys/NOT-A-PREFIX")).status).toBe(422);
    const unknown = await api("DELETE", "/keys/0123456789ab");
    expect(unknown.status).toBe(404);
    expect((unknown.body as { detail: { code: string } }).detail.code).toBe("request.not_found");
    expect((await api("GET", "/keys?workspace=../x")).status).toBe(422);
  });

  it("refuses a workspace token and an API key on every keys route with 403, and no token with 401", async () => {
    const workspace = freshWorkspace("forbidden");
    const created = await createKey(workspace);
    const workspaceToken = await harness.token(workspace);
    for (const token of [workspaceToken, created.key]) {
      for (const [method, path, body] of [
        ["POST", "/keys", { workspace }],
        ["GET", "/keys", undefined],
        ["GET", `/keys?workspace=${workspace}`, undefined],
        ["DELETE", `/keys/${created.prefix}`, undefined],
      ] as const) {
        const answer = await api(method, path, { token, body });
        expect(answer.status, `${method} ${path}`).toBe(403);
        expect((answer.body as { detail: { code: string } }).detail.code).toBe("auth.forbidden");
      }
    }
    const anonymous = await fetch(`${harness.url}/admin/v1/keys`);
    expect(anonymous.status).toBe(401);
    // Nothing was revoked by the refused DELETEs.
    const [row] = await harness.gateway.services.apiKeyAdmin!.list(workspace);
    expect(row!.revokedAt).toBeNull();
  });

  it("a key authenticates like a token of its workspace, and never reaches another workspace's session", async () => {
    const a = freshWorkspace("a");
    const b = freshWorkspace("b");
    const keyA = await createKey(a);
    const keyB = await createKey(b);
    const byKeyA = new ContractClient(harness.url, keyA.key);
    const byKeyB = new ContractClient(harness.url, keyB.key);

    const created = await byKeyA.createSession();
    expect(created.status, created.text).toBe(201);
    const session = (created.body as { session_id: string }).session_id;
    // The same workspace through a JWT sees the key's session: they speak for the same tenant.
    expect((await (await harness.client(a)).getSession(session)).status).toBe(200);
    const ran = await byKeyA.exec(session, { tool: "code_execution", input: { code: "print(6*7)" } });
    expect(ran.status, ran.text).toBe(200);
    expect(ran.text).toContain("42");

    const strangers = {
      get: await byKeyB.getSession(session),
      exec: await byKeyB.exec(session, { tool: "code_execution", input: { code: "print('reached')" } }),
      files: await byKeyB.listFiles(session),
    };
    for (const [what, answer] of Object.entries(strangers)) {
      expect(answer.status, what).toBe(404);
      expect(answer.text).not.toContain("reached");
    }
  });

  it("a revoked key is refused at once; revoking again is fine; the audit trail has both", async () => {
    const workspace = freshWorkspace("revoke");
    const created = await createKey(workspace);
    const client = new ContractClient(harness.url, created.key);
    const before = await client.getSession("no-such-session");
    expect(before.status).toBe(404); // authenticated, then not found
    const revoked = await api("DELETE", `/keys/${created.prefix}`);
    expect(revoked.status).toBe(200);
    expect((revoked.body as { revoked: { revokedAt: string } }).revoked.revokedAt).toEqual(
      expect.any(String),
    );
    const after = await client.getSession("no-such-session");
    expect(after.status).toBe(401);
    expect((after.body as { detail: { code: string } }).detail.code).toBe("auth.invalid");
    expect((await api("DELETE", `/keys/${created.prefix}`)).status).toBe(200);
    const audit = await harness.gateway.services.apiKeyAdmin!.audit(workspace);
    expect(audit.map((entry) => entry.action)).toEqual(["revoked", "created"]);
  });

  it("a key with a wrong secret is refused with 401, the right one passes", async () => {
    const workspace = freshWorkspace("secret");
    const created = await createKey(workspace, { expiresInSeconds: 60 });
    const wrong = `sp_${created.prefix}_${"A".repeat(43)}`;
    expect((await new ContractClient(harness.url, wrong).getSession("x")).status).toBe(401);
    expect((await new ContractClient(harness.url, created.key).getSession("x")).status).toBe(404);
  });

  it("records a key's last use within a flush interval, not per call", async () => {
    const workspace = freshWorkspace("used");
    const created = await createKey(workspace);
    const client = new ContractClient(harness.url, created.key);
    for (let i = 0; i < 5; i++) await client.getSession("x");
    const deadline = Date.now() + 3_000;
    let lastUsedAt: string | null = null;
    while (Date.now() < deadline && lastUsedAt === null) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      [{ lastUsedAt }] = (
        (await api("GET", `/keys?workspace=${workspace}`)).body as { items: { lastUsedAt: string | null }[] }
      ).items as [{ lastUsedAt: string | null }];
    }
    expect(lastUsedAt).not.toBeNull();
    expect(Math.abs(Date.parse(lastUsedAt!) - Date.now())).toBeLessThan(10_000);
  });
});
