/**
 * The admin API's resume (`POST /admin/v1/sessions/{id}/resume`, what the console's Resume and
 * `sandpool sessions resume` call) through `sandpool serve` with docker sandboxes on a gvisor
 * pool (memory kept), Redis and Postgres: an operator hibernates a session, resumes it before
 * any call, and the answer is the session's state after the restore (running, in a new
 * container); the interpreter's memory is there for the next call. A running session is
 * answered as it is; an unknown one is 404; a workspace token is refused; the resume is
 * audited. Every admin answer is checked against the admin OpenAPI document.
 */
import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { assertAdminResponse } from "../../support/admin-openapi.js";
import type { CliServer } from "../../support/cli.js";
import { containerRunning, gvisorSuiteAvailable } from "../../support/docker-suite.js";
import {
  createServeDeployment,
  SERVE_AUDIENCE,
  SERVE_SECRET,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";

const available = (await serveStackAvailable()) && (await gvisorSuiteAvailable());
const checkpointDir = path.join(await mkdtemp(path.join(tmpdir(), "sp-resume-")), "checkpoints");

const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 0
    maxTotal: 2
    coldStartTimeoutMs: 60000
  - name: gv
    image: sandpool/sandbox:dev
    isolation: gvisor
    minIdle: 0
    maxTotal: 2
    coldStartTimeoutMs: 60000
runtime:
  docker:
    preloadModules: []
hibernate:
  checkpointDir: ${checkpointDir}
intervals:
  warmMs: 500
  reapMs: 500
  reconcileMs: 5000
  orphanGraceMs: 70000
`;

interface SessionItem {
  id: string;
  workspace: string;
  state: string;
  runtimeId: string;
  checkpoint?: { kind: string };
}

describe.skipIf(!available)("the admin API's resume (serve, docker, gvisor)", () => {
  const workspace = "resume-gv";
  let deployment: ServeDeployment;
  let replica: CliServer;
  let adminToken: string;

  beforeAll(async () => {
    deployment = await createServeDeployment(CONFIG);
    replica = await deployment.startReplica();
    adminToken = await mintToken({
      secret: SERVE_SECRET,
      audience: SERVE_AUDIENCE,
      workspace: "ops",
      admin: true,
      subject: "carol",
    });
  }, 180_000);
  afterAll(() => deployment?.close(), 120_000);

  /** One admin call, its answer checked against the admin document under `route`. */
  async function admin(method: string, route: string, concrete: string, token = adminToken) {
    const answer = await fetch(`${replica.url}${concrete}`, {
      method,
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await answer.json()) as Record<string, unknown>;
    assertAdminResponse(method, route, answer.status, body);
    return { status: answer.status, body };
  }
  const RESUME = "/admin/v1/sessions/{id}/resume";
  const resume = (id: string, token?: string) =>
    admin("POST", RESUME, `/admin/v1/sessions/${encodeURIComponent(id)}/resume`, token);

  it("restores a hibernated session now and answers its state after the restore", async () => {
    const set = await fetch(`${replica.url}/admin/v1/workspaces/${workspace}/policy`, {
      method: "PUT",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ isolation: "gvisor" }),
    });
    expect(set.status, await set.text()).toBe(200);
    const client = await deployment.client(replica, workspace);
    const created = await client.createSession();
    expect(created.status).toBe(201);
    const id = (created.body as { session_id: string }).session_id;
    await client.run(id, "code_execution", { code: "counter = 41" });

    const hibernated = await admin(
      "POST",
      "/admin/v1/sessions/{id}/hibernate",
      `/admin/v1/sessions/${id}/hibernate`,
    );
    expect(hibernated.status, JSON.stringify(hibernated.body)).toBe(200);
    const before = hibernated.body.hibernated as SessionItem;
    expect(before.state).toBe("hibernated");
    expect(before.checkpoint?.kind).toBe("memory");

    const resumed = await resume(id);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body.restored).toBe(true);
    const after = resumed.body.resumed as SessionItem;
    expect(after).toMatchObject({ id, workspace, state: "running" });
    expect(after.checkpoint).toBeUndefined();
    expect(after.runtimeId).not.toBe(before.runtimeId);
    expect(await containerRunning(after.runtimeId)).toBe(true);
    const hex = Buffer.from(workspace).toString("hex");
    expect(await readdir(path.join(checkpointDir, hex)).catch(() => [])).not.toContain(id);

    // The next call finds the interpreter's memory, and no resume on its way.
    const run = await client.run(id, "code_execution", { code: "print(counter + 1)" });
    expect(run.stdout).toBe("42\n");
    expect(run.stderr).toBe("");

    // A running session: answered as it is, nothing restored.
    const again = await resume(id);
    expect(again.status).toBe(200);
    expect(again.body.restored).toBe(false);
    expect((again.body.resumed as SessionItem).runtimeId).toBe(after.runtimeId);

    const audit = await admin("GET", "/admin/v1/audit", "/admin/v1/audit?kind=admin&workspace=resume-gv");
    expect(audit.status).toBe(200);
    const rows = audit.body.items as { action: string; target: string; actor: string }[];
    expect(rows.filter((row) => row.action === "session.resume")).toEqual([
      expect.objectContaining({ target: id, actor: "carol" }),
    ]);
    expect((await client.destroy(id)).status).toBe(204);
  }, 180_000);

  it("answers 404 for an unknown session and refuses a workspace token", async () => {
    const unknown = await resume("no-such-session");
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ detail: { code: "session.not_found" } });

    const workspaceToken = await mintToken({ secret: SERVE_SECRET, audience: SERVE_AUDIENCE, workspace });
    const refused = await resume("no-such-session", workspaceToken);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ detail: { code: "auth.forbidden" } });
  });
});
