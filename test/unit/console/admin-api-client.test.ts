/**
 * The console's API calls (web/console/src/api.ts): each one is the admin API operation the
 * CLI calls (method, path, query, JSON body), carries the admin token as a bearer token and
 * nothing else (no cookie: credentials stay in the page's memory), and a refusal becomes an
 * AdminApiError with the API's code, message and per-field problems.
 */
import { describe, expect, it } from "vitest";
import { AdminApi, AdminApiError } from "../../../web/console/src/api.js";

interface Seen {
  method: string;
  url: URL;
  authorization: string | null;
  cookie: string | null;
  body: unknown;
}

function fakeGateway(answer: (seen: Seen) => { status: number; body?: unknown }) {
  const calls: Seen[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    const text = await request.text();
    const seen: Seen = {
      method: request.method,
      url: new URL(request.url),
      authorization: request.headers.get("authorization"),
      cookie: request.headers.get("cookie"),
      body: text === "" ? undefined : JSON.parse(text),
    };
    calls.push(seen);
    const { status, body } = answer(seen);
    return new Response(body === undefined ? null : JSON.stringify(body), {
      status,
      headers: { "Content-Type": "application/json" },
    });
  };
  return { calls, api: new AdminApi("admin-token", { baseUrl: "http://gateway.test", fetch }) };
}

const refusal = (code: string, message: string, problems?: string[]) => ({
  detail: { code, message, ...(problems ? { problems } : {}) },
});

describe("the console's admin API client", () => {
  it("signs in with one admin API call, the token as a bearer token and no cookie", async () => {
    const { calls, api } = fakeGateway(() => ({ status: 200, body: { workspaces: [] } }));
    await api.signIn();
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ method: "GET", authorization: "Bearer admin-token", cookie: null });
    expect(calls[0]!.url.pathname).toBe("/admin/v1/workspaces");
  });

  it("refuses a token without admin rights with auth.forbidden, and a bad one as unauthenticated", async () => {
    const forbidden = fakeGateway(() => ({
      status: 403,
      body: refusal("auth.forbidden", "an admin token is required"),
    }));
    const error = await forbidden.api.signIn().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AdminApiError);
    expect(error).toMatchObject({
      status: 403,
      code: "auth.forbidden",
      forbidden: true,
      unauthenticated: false,
    });

    const invalid = fakeGateway(() => ({
      status: 401,
      body: refusal("auth.invalid", "the token is not valid"),
    }));
    await expect(invalid.api.signIn()).rejects.toMatchObject({
      unauthenticated: true,
      message: "the token is not valid",
    });
  });

  it("edits a policy with PUT and the changed fields only; a refused value keeps its problems", async () => {
    const { calls, api } = fakeGateway(({ body }) =>
      (body as { maxConcurrentSessions?: number }).maxConcurrentSessions === 100_000
        ? {
            status: 422,
            body: refusal("request.malformed", "the policy is not valid", [
              "maxConcurrentSessions: above the deployment's ceiling (10)",
            ]),
          }
        : { status: 200, body: { workspace: "team a", configured: true } },
    );
    await api.putPolicy("team a", { enabled: false });
    expect(calls[0]).toMatchObject({ method: "PUT", body: { enabled: false } });
    expect(calls[0]!.url.pathname).toBe("/admin/v1/workspaces/team%20a/policy");

    const error = await api
      .putPolicy("team a", { maxConcurrentSessions: 100_000 })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      status: 422,
      code: "request.malformed",
      problems: ["maxConcurrentSessions: above the deployment's ceiling (10)"],
    });
  });

  it("reads pools, nodes, sessions, keys and audit rows with their query", async () => {
    const { calls, api } = fakeGateway(() => ({ status: 200, body: { items: [] } }));
    await api.pools();
    await api.nodes();
    await api.sessions("team-a");
    await api.sessions();
    await api.keys("team-a");
    await api.audit({ workspace: "team-a", kind: "admin", limit: 200 });
    expect(calls.map((call) => `${call.method} ${call.url.pathname}${call.url.search}`)).toEqual([
      "GET /admin/v1/pools",
      "GET /admin/v1/nodes",
      "GET /admin/v1/sessions?workspace=team-a",
      "GET /admin/v1/sessions",
      "GET /admin/v1/keys?workspace=team-a",
      "GET /admin/v1/audit?workspace=team-a&kind=admin&limit=200",
    ]);
  });

  it("asks for usage reports per hour or day from an instant", async () => {
    const { calls, api } = fakeGateway(() => ({ status: 200, body: { buckets: [], totals: {} } }));
    await api.usage("team-a", "day", new Date("2026-11-06T00:00:00Z"));
    expect(calls[0]!.url.pathname).toBe("/admin/v1/usage");
    expect(Object.fromEntries(calls[0]!.url.searchParams)).toEqual({
      workspace: "team-a",
      by: "day",
      since: "2026-11-06T00:00:00.000Z",
    });
  });

  it("ends, hibernates and resumes sessions, drains nodes, creates and revokes keys, explains", async () => {
    const { calls, api } = fakeGateway(({ method, url }) => {
      if (url.pathname === "/admin/v1/keys" && method === "POST")
        return { status: 201, body: { key: "sp_x" } };
      if (url.pathname.endsWith("/hibernate")) return { status: 200, body: { hibernated: { id: "s1" } } };
      if (url.pathname.endsWith("/resume"))
        return { status: 200, body: { resumed: { id: "s1", state: "running" }, restored: true } };
      if (url.pathname.startsWith("/admin/v1/sessions/"))
        return { status: 200, body: { ended: { id: "s1" } } };
      if (url.pathname.startsWith("/admin/v1/keys/"))
        return { status: 200, body: { revoked: { prefix: "p" } } };
      return { status: 200, body: { id: "n1", decision: "deny" } };
    });
    expect(await api.endSession("s/1")).toEqual({ id: "s1" });
    expect(await api.hibernateSession("s1")).toEqual({ id: "s1" });
    expect(await api.resumeSession("s1")).toEqual({ id: "s1", state: "running" });
    await api.drainNode("n1", true);
    await api.drainNode("n1", false);
    expect(await api.createKey("team-a", "ci", 86_400)).toEqual({ key: "sp_x" });
    await api.createKey("team-a", null);
    expect(await api.revokeKey("sp_abc")).toEqual({ prefix: "p" });
    await api.explain({ workspace: "team-a", operation: "sessions.create", args: { image: "x" } });
    expect(calls.map((call) => [call.method, call.url.pathname, call.body])).toEqual([
      ["DELETE", "/admin/v1/sessions/s%2F1", undefined],
      ["POST", "/admin/v1/sessions/s1/hibernate", undefined],
      ["POST", "/admin/v1/sessions/s1/resume", undefined],
      ["POST", "/admin/v1/nodes/n1/drain", undefined],
      ["POST", "/admin/v1/nodes/n1/undrain", undefined],
      ["POST", "/admin/v1/keys", { workspace: "team-a", name: "ci", expiresInSeconds: 86_400 }],
      ["POST", "/admin/v1/keys", { workspace: "team-a", name: null }],
      ["DELETE", "/admin/v1/keys/sp_abc", undefined],
      [
        "POST",
        "/admin/v1/explain",
        { workspace: "team-a", operation: "sessions.create", args: { image: "x" } },
      ],
    ]);
  });

  it("says the gateway could not be reached (status 0) when the fetch itself fails", async () => {
    const api = new AdminApi("t", {
      baseUrl: "http://gateway.test",
      fetch: async () => {
        throw new TypeError("Failed to fetch");
      },
    });
    await expect(api.pools()).rejects.toMatchObject({ status: 0, code: "network" });
  });

  it("names the status when a refusal has no error body", async () => {
    const { api } = fakeGateway(() => ({ status: 502 }));
    await expect(api.pools()).rejects.toMatchObject({ status: 502, message: "the gateway answered 502" });
  });
});
