/**
 * The route table generated from the registry serves any group's handler map through the
 * pipeline: here the admin group (mounted for admin tokens) with a small handler map, as the
 * admin API's handlers will be, over real authentication (HS256) and Hono's request handling.
 */
import { Hono } from "hono";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import * as z from "zod/mini";
import { bindOperations } from "../../../src/http/bind-operations.js";
import { errorResponse } from "../../../src/http/common/error-response.js";
import type { GatewayEnv } from "../../../src/http/gateway-env.js";
import { observeRequest } from "../../../src/http/middleware/observe-request.js";
import type { OperationCall, OperationHandlers } from "../../../src/operations/handler.js";
import { OperationRegistry } from "../../../src/operations/registry.js";
import { bearer, check, KeptUsage } from "../pipeline/fixtures.js";

const log = pino({ level: "silent" });

function adminApp(handlers: OperationHandlers, registry?: OperationRegistry) {
  const deps = { check: check(), usage: new KeptUsage() };
  const app = new Hono<GatewayEnv>();
  app.use("*", observeRequest(log, deps.check.metrics));
  bindOperations(app, "admin", handlers, deps, { maxJsonBytes: 1024, registry });
  app.onError((error, c) => errorResponse(c, error, log));
  return app;
}

const seen: OperationCall[] = [];
const handlers: OperationHandlers = {
  "admin.workspaces.list": async (call) => {
    seen.push(call);
    return { kind: "json", status: 200, body: { workspaces: [], by: call.caller.subject ?? null } };
  },
  "admin.policy.delete": async (call) => {
    seen.push(call);
    return { kind: "empty", status: 204 };
  },
};

describe("the route table bound to the pipeline, for the admin group", () => {
  it("serves an admin token, with path parameters admitted and no HTTP in sight", async () => {
    const app = adminApp(handlers);
    const token = await bearer({ admin: true });
    const listed = await app.request("/workspaces", { headers: { authorization: token } });
    expect(listed.status).toBe(200);
    expect(await listed.json()).toEqual({ workspaces: [], by: null });
    const deleted = await app.request("/workspaces/ws-1/policy", {
      method: "DELETE",
      headers: { authorization: token },
    });
    expect(deleted.status).toBe(204);
    expect(seen.at(-1)?.args.params).toEqual({ ws: "ws-1" });
    expect(seen.at(-1)?.operation.id).toBe("admin.policy.delete");
  });

  it("answers 401 without a valid token and 403 auth.forbidden for a workspace token", async () => {
    const app = adminApp(handlers);
    const missing = await app.request("/workspaces");
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="sandpool"');
    const workspace = await app.request("/workspaces", {
      headers: { authorization: await bearer({ workspace: "ws-1" }) },
    });
    expect(workspace.status).toBe(403);
    expect(await workspace.json()).toEqual({
      detail: { code: "auth.forbidden", message: "the admin API needs an admin token" },
    });
  });

  it("binds only the operations that have a handler", async () => {
    const app = adminApp(handlers);
    const unbound = await app.request("/pools", {
      headers: { authorization: await bearer({ admin: true }) },
    });
    expect(unbound.status).toBe(404);
  });

  it("reads a JSON body under the size cap and checks it against the declared schema", async () => {
    const registry = new OperationRegistry().register({
      id: "admin.echo",
      group: "admin",
      summary: "Echo a name.",
      method: "POST",
      path: "/echo",
      label: "AdminEcho",
      mountedFor: "admin",
      effects: ["read"],
      answers: ["json"],
      success: 200,
      input: "json",
      body: z.object({ name: z.string() }),
    });
    const app = adminApp(
      { "admin.echo": async (call) => ({ kind: "json", status: 200, body: call.args.body }) },
      registry,
    );
    const headers = { authorization: await bearer({ admin: true }), "content-type": "application/json" };
    const echoed = await app.request("/echo", { method: "POST", headers, body: '{"name":"x"}' });
    expect(await echoed.json()).toEqual({ name: "x" });
    const malformed = await app.request("/echo", { method: "POST", headers, body: '{"name":1}' });
    expect(malformed.status).toBe(422);
    expect(((await malformed.json()) as { detail: { problems: string[] } }).detail.problems).toHaveLength(1);
    const tooLarge = await app.request("/echo", {
      method: "POST",
      headers,
      body: JSON.stringify({ name: "x".repeat(2000) }),
    });
    expect(tooLarge.status).toBe(413);
  });
});
