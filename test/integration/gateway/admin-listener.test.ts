/**
 * The admin API on a listener of its own (`adminListener`): served there and only there. The
 * public listener answers `/admin/v1/*` exactly as it answers any unknown path (401 before
 * 404, whatever the token), and the admin listener serves nothing but the admin API (and the
 * operator console's static files beside it, docs/console.md).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { startTestGateway, TEST_SECRET, type TestGateway } from "../../support/gateway-harness.js";

let harness: TestGateway;
let adminUrl: string;
const tokens: Record<"none" | "ordinary" | "admin" | "forged", string | undefined> = {
  none: undefined,
  ordinary: undefined,
  admin: undefined,
  forged: undefined,
};

beforeAll(async () => {
  harness = await startTestGateway({ adminListener: { host: "127.0.0.1", port: 0 } });
  adminUrl = harness.gateway.admin!.url;
  tokens.ordinary = await mintToken({ secret: TEST_SECRET, workspace: "team-a", ttlSeconds: 600 });
  tokens.admin = await mintToken({ secret: TEST_SECRET, admin: true, ttlSeconds: 600 });
  tokens.forged = await mintToken({
    secret: "another-secret-of-at-least-thirty-two-bytes",
    admin: true,
    ttlSeconds: 600,
  });
});
afterAll(() => harness?.close());

async function get(base: string, path: string, token: string | undefined) {
  const res = await fetch(`${base}${path}`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  const text = await res.text();
  const body = (res.headers.get("content-type") ?? "").includes("json") && text ? JSON.parse(text) : text;
  return { status: res.status, code: (body as { detail?: { code?: string } }).detail?.code };
}

describe("adminListener", () => {
  it("listens on an address of its own", () => {
    expect(harness.gateway.admin).toBeDefined();
    expect(harness.gateway.admin!.port).not.toBe(harness.gateway.port);
    expect(adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("serves the admin API there: 200 for an admin token, 403 for an ordinary one, 401 without", async () => {
    expect(await get(adminUrl, "/admin/v1/pools", tokens.admin)).toEqual({ status: 200, code: undefined });
    expect(await get(adminUrl, "/admin/v1/workspaces", tokens.admin)).toMatchObject({ status: 200 });
    expect(await get(adminUrl, "/admin/v1/pools", tokens.ordinary)).toEqual({
      status: 403,
      code: "auth.forbidden",
    });
    expect(await get(adminUrl, "/admin/v1/pools", undefined)).toEqual({ status: 401, code: "auth.missing" });
    expect(await get(adminUrl, "/admin/v1/pools", tokens.forged)).toEqual({
      status: 401,
      code: "auth.invalid",
    });
  });

  it("answers admin paths on the public listener exactly as unknown routes, for every kind of token", async () => {
    for (const kind of Object.keys(tokens) as (keyof typeof tokens)[]) {
      const unknown = await get(harness.url, "/no-such-route", tokens[kind]);
      for (const path of ["/admin/v1/pools", "/admin/v1/workspaces", "/admin/v1/workspaces/team-a/policy"]) {
        expect(await get(harness.url, path, tokens[kind]), `${kind} ${path}`).toEqual(unknown);
      }
    }
    // And what that is: 401 first, 404 for a token good enough for the contract.
    expect(await get(harness.url, "/admin/v1/pools", undefined)).toEqual({
      status: 401,
      code: "auth.missing",
    });
    expect(await get(harness.url, "/admin/v1/pools", tokens.ordinary)).toEqual({
      status: 404,
      code: "request.not_found",
    });
  });

  it("keeps the contract and health on the public listener", async () => {
    expect((await fetch(`${harness.url}/healthz`)).status).toBe(200);
    const client = await harness.client("team-a");
    const created = await client.createSession({});
    expect(created.status, created.text).toBe(201);
  });

  it("serves the console beside the admin API: on the admin listener, not on the public one", async () => {
    // Run from src/, the console is not built: its route answers so, without a token.
    const there = await fetch(`${adminUrl}/console/`);
    expect(there.status).toBe(404);
    expect(await there.text()).toMatch(/console is not built/);
    expect(await get(harness.url, "/console/", undefined)).toEqual({ status: 401, code: "auth.missing" });
  });

  it("serves nothing but the admin API on the admin listener (401 before 404)", async () => {
    for (const path of ["/healthz", "/metrics", "/sessions", "/admin/v2/pools"]) {
      expect(await get(adminUrl, path, undefined), path).toEqual({ status: 401, code: "auth.missing" });
      expect(await get(adminUrl, path, tokens.admin), path).toEqual({
        status: 404,
        code: "request.not_found",
      });
      expect(await get(adminUrl, path, tokens.ordinary), path).toEqual({
        status: 404,
        code: "request.not_found",
      });
    }
  });
});
