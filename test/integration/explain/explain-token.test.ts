/**
 * Explain's "would this token be allowed" (`POST /admin/v1/explain` with `token`), on a real
 * gateway over HTTP: the gateway's own authenticator verifies the token, and the trace's first
 * step says valid or not and why (expired, bad signature, revoked or unknown key, an admin
 * token naming no workspace), the token's workspace, and that the rest is evaluated for it
 * (a token of another workspace than the one asked about is said so). The token never comes
 * back in an answer, a refusal included. Every answer is checked against the admin document.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { adminRequest } from "../../support/admin-api.js";
import { assertAdminResponse } from "../../support/admin-openapi.js";
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
    policy: { allowedImages: [TEST_IMAGE], defaultImage: TEST_IMAGE },
    pools: [{ name: "default", image: TEST_IMAGE, minIdle: 0, maxTotal: 2, demand: false }],
  });
  adminToken = await testAdminToken();
  // team-b may not open sessions: a token of team-b is refused there, whatever was asked.
  const disabled = await adminRequest(harness.url, adminToken, "PUT", "/workspaces/team-b/policy", {
    body: { enabled: false },
  });
  expect(disabled.status, disabled.text).toBe(200);
});
afterAll(() => harness?.close());

interface Explained {
  workspace: string;
  decision: string;
  code: string | null;
  steps: { step: string; verdict: string; code?: string; value?: unknown; detail?: string }[];
  token?: {
    valid: boolean;
    reason: string | null;
    workspace: string | null;
    admin: boolean;
    expires: string | null;
  };
}

async function explain(token: unknown, workspace = "team-a") {
  const answer = await adminRequest(harness.url, adminToken, "POST", "/explain", {
    body: { workspace, operation: "sessions.create", args: {}, token },
  });
  assertAdminResponse("post", "/admin/v1/explain", answer.status, answer.body);
  if (typeof token === "string" && token.length > 8) expect(answer.text).not.toContain(token);
  return { status: answer.status, body: answer.body as Explained, text: answer.text };
}

describe("explain with a token", () => {
  it("a valid token of the workspace asked about: passes, names its workspace and expiry", async () => {
    const token = await mintToken({ secret: TEST_SECRET, workspace: "team-a", ttlSeconds: 600 });
    const { status, body } = await explain(token);
    expect(status).toBe(200);
    expect(body).toMatchObject({ workspace: "team-a", decision: "allow", code: null });
    expect(body.token).toMatchObject({ valid: true, reason: null, workspace: "team-a", admin: false });
    expect(Date.parse(body.token!.expires!)).toBeGreaterThan(Date.now());
    expect(body.steps[0]).toMatchObject({ step: "token", verdict: "pass", value: "team-a" });
    expect(body.steps[0]!.detail).not.toMatch(/not a token of/);
  });

  it("a token of another workspace: says so, and evaluates the rest for the token's workspace", async () => {
    const token = await mintToken({ secret: TEST_SECRET, workspace: "team-b", ttlSeconds: 600 });
    const { body } = await explain(token, "team-a");
    expect(body.workspace).toBe("team-b");
    expect(body.steps[0]!.detail).toMatch(/not a token of 'team-a'.*evaluated for 'team-b'/);
    // team-b is disabled: the real call with this token is refused for team-b's policy.
    expect(body).toMatchObject({ decision: "deny", code: "policy.workspace_disabled" });
  });

  it("refused tokens say why (expired, bad signature, admin without a workspace), never echoing them", async () => {
    const expired = await mintToken({ secret: TEST_SECRET, workspace: "team-a", ttlSeconds: -60 });
    const forged = await mintToken({
      secret: "another-secret-0123456789-abcdefghijklmnop",
      workspace: "team-a",
    });
    const cases = [
      [expired, "auth.expired", "expired"],
      [forged, "auth.invalid", "bad_signature"],
      ["not a token at all", "auth.invalid", "malformed"],
      [adminToken, "auth.invalid", "no_workspace"],
    ] as const;
    for (const [token, code, reason] of cases) {
      const { body } = await explain(token);
      expect(body.token, reason).toMatchObject({ valid: false, reason, workspace: null, expires: null });
      expect(body.steps[0], reason).toMatchObject({ step: "token", verdict: "deny", code });
      // The first refusal decides, as the real call stops at authentication.
      expect(body, reason).toMatchObject({ workspace: "team-a", decision: "deny", code });
    }
  });

  it("an API key: valid while it lives, then refused as revoked", async () => {
    const created = await adminRequest(harness.url, adminToken, "POST", "/keys", {
      body: { workspace: "team-a", name: "explained" },
    });
    expect(created.status, created.text).toBe(201);
    const { key, prefix } = created.body as { key: string; prefix: string };
    expect((await explain(key)).body.token).toMatchObject({ valid: true, workspace: "team-a" });
    expect((await adminRequest(harness.url, adminToken, "DELETE", `/keys/${prefix}`)).status).toBe(200);
    const revoked = await explain(key);
    expect(revoked.body.token).toMatchObject({ valid: false, reason: "revoked_key" });
  });

  it("a token that is not a string, or empty, is a 422 that does not quote it", async () => {
    const answer = await explain({ secret: "sp_quoted-nowhere" });
    expect(answer.status).toBe(422);
    expect(answer.text).toMatch(/token: .*expected string/);
    expect(answer.text).not.toContain("sp_quoted-nowhere");
    const empty = await explain("");
    expect(empty.status).toBe(422);
    expect(empty.text).toMatch(/token: a bearer token, 1 to/);
  });
});
