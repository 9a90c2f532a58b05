import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  newSession,
  processExists,
  startTestSandbox,
  type TestSandbox,
  waitFor,
} from "../../support/sandbox-server.js";

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox({
    maxSessions: 20,
    defaultIdleTimeoutSeconds: 30,
    maxIdleTimeoutSeconds: 60,
    defaultMaxLifetimeSeconds: 120,
    maxLifetimeSeconds: 600,
  });
});
afterAll(() => sandbox.close());

describe("CreateSession", () => {
  it("answers 201 with a handle carrying the values in force", async () => {
    const before = Date.now() / 1000;
    const answer = await sandbox.client.createSession();
    expect(answer.status).toBe(201);
    const handle = answer.body as Record<string, number | string>;
    expect(handle.session_id).toMatch(/^[0-9a-f]{32}$/);
    expect(handle.idle_timeout_seconds).toBe(30);
    expect(handle.max_lifetime_seconds).toBe(120);
    expect(handle.created_at).toBeGreaterThanOrEqual(Math.floor(before));
    expect(handle.last_activity_at).toBe(handle.created_at);
  });

  it("honours lifetime hints below the ceilings and clamps those above", async () => {
    const honoured = await sandbox.client.createSession({
      idle_timeout_seconds: 5,
      max_lifetime_seconds: 50,
    });
    expect(honoured.body).toMatchObject({ idle_timeout_seconds: 5, max_lifetime_seconds: 50 });
    const clamped = await sandbox.client.createSession({
      idle_timeout_seconds: 10_000,
      max_lifetime_seconds: 99_999,
    });
    expect(clamped.body).toMatchObject({ idle_timeout_seconds: 60, max_lifetime_seconds: 600 });
    const nulls = await sandbox.client.createSession({
      idle_timeout_seconds: null,
      max_lifetime_seconds: null,
    });
    expect(nulls.body).toMatchObject({ idle_timeout_seconds: 30, max_lifetime_seconds: 120 });
  });

  it("accepts and ignores an image hint and unknown fields", async () => {
    const answer = await sandbox.client.createSession({ image: "python:3.12", purpose: "tests" });
    expect(answer.status).toBe(201);
  });

  it.each([
    [{ idle_timeout_seconds: 0 }],
    [{ max_lifetime_seconds: -5 }],
    [{ idle_timeout_seconds: "60" }],
    [{ max_lifetime_seconds: 1.5 }],
    [[1, 2]],
  ])("refuses malformed hints %j with 422", async (payload) => {
    const answer = await sandbox.client.createSession(payload);
    expect(answer.status).toBe(422);
    expect((answer.body as any).detail.code).toBe("request.malformed");
  });

  it("refuses a body that is not JSON-typed with 415 and bad JSON with 400", async () => {
    const typed = await sandbox.client.request("POST", "/sessions", {
      body: "{}",
      headers: { "content-type": "text/plain" },
    });
    expect(typed.status).toBe(415);
    const broken = await sandbox.client.request("POST", "/sessions", {
      body: "{",
      headers: { "content-type": "application/json" },
    });
    expect(broken.status).toBe(400);
  });
});

describe("GetSession / DestroySession", () => {
  it("returns the handle, touched by activity", async () => {
    const id = await newSession(sandbox.client);
    const first = (await sandbox.client.getSession(id)).body as Record<string, number>;
    await new Promise((resolve) => setTimeout(resolve, 20));
    await sandbox.client.run(id, "bash_code_execution", { command: "true" });
    const second = (await sandbox.client.getSession(id)).body as Record<string, number>;
    expect(second.last_activity_at).toBeGreaterThan(first.last_activity_at!);
    expect(second.created_at).toBe(first.created_at);
  });

  it("answers 404 for an unknown session on every route", async () => {
    const ghost = "0123456789abcdef0123456789abcdef";
    expect((await sandbox.client.getSession(ghost)).status).toBe(404);
    expect((await sandbox.client.exec(ghost, { tool: "code_execution", input: { code: "1" } })).status).toBe(
      404,
    );
    expect((await sandbox.client.listFiles(ghost)).status).toBe(404);
    expect((await sandbox.client.getFile(ghost, "a")).status).toBe(404);
    expect((await sandbox.client.putFile(ghost, "x", { path: "a" })).status).toBe(404);
  });

  it("destroys idempotently: 204 twice, then 404 on use, files and processes gone", async () => {
    const id = await newSession(sandbox.client);
    // A child of the interpreter, in its process group: it outlives the call (a bash job
    // would not: bash's group is killed when the command exits), not the session.
    const python = await sandbox.client.run(id, "code_execution", {
      code: "import os, subprocess\nchild = subprocess.Popen(['sleep', '300'])\nprint(os.getpid(), child.pid)",
    });
    const [interpreter, sleeper] = python.stdout.trim().split(" ").map(Number) as [number, number];
    expect(processExists(sleeper)).toBe(true);
    expect(processExists(interpreter)).toBe(true);

    expect((await sandbox.client.destroy(id)).status).toBe(204);
    expect((await sandbox.client.destroy(id)).status).toBe(204);
    expect((await sandbox.client.exec(id, { tool: "code_execution", input: { code: "1" } })).status).toBe(
      404,
    );
    await waitFor(() => !processExists(sleeper) && !processExists(interpreter));
    await expect(stat(path.join(sandbox.root, id))).rejects.toThrow();
  });
});

describe("capacity and reaping", () => {
  it("refuses sessions beyond its limit with 503 and Retry-After", async () => {
    const small = await startTestSandbox({ maxSessions: 2, prewarmInterpreter: false });
    try {
      await newSession(small.client);
      const second = await newSession(small.client);
      const refused = await small.client.createSession();
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect((refused.body as any).detail.code).toBe("capacity.exhausted");
      await small.client.destroy(second);
      expect((await small.client.createSession()).status).toBe(201);
    } finally {
      await small.close();
    }
  });

  it("reaps idle sessions and sessions past their lifetime, with their files", async () => {
    const quick = await startTestSandbox({ reapIntervalMs: 50, prewarmInterpreter: false });
    try {
      const idle = await newSession(quick.client, { idle_timeout_seconds: 1 });
      const old = await newSession(quick.client, { max_lifetime_seconds: 1, idle_timeout_seconds: 100 });
      const keeper = await newSession(quick.client);
      // Keep `old` busy: lifetime ends it anyway; idle never ends a session with a call running.
      const busy = quick.client.run(old, "bash_code_execution", { command: "sleep 5" });
      await waitFor(async () => (await quick.client.getSession(idle)).status === 404, 4_000);
      await waitFor(async () => (await quick.client.getSession(old)).status === 404, 4_000);
      await busy.catch(() => undefined);
      expect((await quick.client.getSession(keeper)).status).toBe(200);
      // A reaped session is unreachable at once; its files go right after.
      await waitFor(async () => (await readdir(quick.root)).join() === keeper, 4_000);
    } finally {
      await quick.close();
    }
  });
});
