/**
 * Sessions that hibernate and resume (issue 29, docs/hibernate.md) through `sandpool serve`
 * with docker sandboxes, Redis and Postgres, on a container pool (files kept, the interpreter
 * restarts and says so) and a gvisor pool (memory kept): an operator hibernates a session,
 * its container goes, the admin list says `hibernated`, and its next call resumes it,
 * transparently. Attacked as a tenant would: another workspace's token finds nothing, a
 * session with a call in flight is not hibernated under it, ending a hibernated session
 * deletes its checkpoint, and the workspace's bound holds.
 */
import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { type Isolation, isolationLevels } from "../../../src/policy-schema/isolation-levels.js";
import type { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import type { CliServer } from "../../support/cli.js";
import { assertContractResponse } from "../../support/contract.js";
import { containerRunning, gvisorSuiteAvailable } from "../../support/docker-suite.js";
import { streamExec, streamedText } from "../../support/exec-event-stream.js";
import {
  createServeDeployment,
  SERVE_AUDIENCE,
  SERVE_SECRET,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { waitFor } from "../../support/wait-for.js";

const available = (await serveStackAvailable()) && (await gvisorSuiteAvailable());
const checkpointDir = path.join(await mkdtemp(path.join(tmpdir(), "sp-hib-")), "checkpoints");

const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 1
    maxTotal: 6
    coldStartTimeoutMs: 60000
  - name: gv
    image: sandpool/sandbox:dev
    isolation: gvisor
    minIdle: 0
    maxTotal: 3
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

const FILES_NOTE = "hibernated and resumed with its files only";

interface SessionItem {
  id: string;
  workspace: string;
  state: string;
  runtimeId: string;
  checkpoint?: { kind: string; bytes: number };
}

describe.skipIf(!available)("session hibernation (serve, docker)", () => {
  let deployment: ServeDeployment;
  let replica: CliServer;
  let store: RedisCoordinationStore;
  let adminToken: string;

  beforeAll(async () => {
    deployment = await createServeDeployment(CONFIG);
    replica = await deployment.startReplica();
    store = await deployment.store();
    adminToken = await mintToken({
      secret: SERVE_SECRET,
      audience: SERVE_AUDIENCE,
      workspace: "ops",
      admin: true,
    });
  }, 180_000);
  afterAll(() => deployment?.close(), 120_000);

  const admin = (method: string, route: string, body?: unknown) =>
    fetch(`${replica.url}/admin/v1${route}`, {
      method,
      headers: {
        authorization: `Bearer ${adminToken}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }).then(async (answer) => ({
      status: answer.status,
      body: (await answer.json()) as Record<string, unknown>,
    }));

  const hibernate = (id: string, workspace?: string) =>
    admin("POST", `/sessions/${id}/hibernate${workspace ? `?workspace=${workspace}` : ""}`);

  async function listed(id: string): Promise<SessionItem | undefined> {
    const answer = await admin("GET", "/sessions");
    expect(answer.status).toBe(200);
    return (answer.body.items as SessionItem[]).find((item) => item.id === id);
  }

  async function checkpointsOf(workspace: string): Promise<string[]> {
    const dirs = await readdir(checkpointDir).catch(() => [] as string[]);
    const hex = Buffer.from(workspace).toString("hex");
    return dirs.includes(hex)
      ? (await readdir(path.join(checkpointDir, hex))).filter((d) => !d.startsWith("."))
      : [];
  }

  async function setPolicy(workspace: string, edit: Record<string, unknown>) {
    const answer = await admin("PUT", `/workspaces/${workspace}/policy`, edit);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  }

  const POOL_POLICY: Record<Isolation, Record<string, unknown>> = {
    container: {},
    gvisor: { isolation: "gvisor" },
  };

  describe.each(isolationLevels)("on %s isolation", (isolation) => {
    const workspace = `hib-${isolation}`;
    beforeAll(() => setPolicy(workspace, POOL_POLICY[isolation]));

    it("hibernates on an operator's word, frees the container, and resumes on the next call", async () => {
      const client = await deployment.client(replica, workspace);
      const created = await client.createSession();
      expect(created.status).toBe(201);
      const id = (created.body as { session_id: string }).session_id;
      await client.run(id, "code_execution", { code: "counter = 41\nopen('notes.txt', 'w').write('kept')" });
      const before = (await store.getLease({ workspace, sessionId: id }))!.sandbox.runtimeId;

      const answer = await hibernate(id);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const view = answer.body.hibernated as SessionItem;
      expect(view.state).toBe("hibernated");
      expect(view.checkpoint?.kind).toBe(isolation === "gvisor" ? "memory" : "files");
      expect(view.checkpoint?.bytes).toBeGreaterThan(0);
      expect(await containerRunning(before)).toBe(false);
      expect((await listed(id))?.state).toBe("hibernated");
      expect(await checkpointsOf(workspace)).toEqual([id]);
      // Hibernating again is harmless: it stays as it is.
      expect((await hibernate(id)).status).toBe(200);

      // Any call brings it back.
      const resumedAt = Date.now();
      const resumed = await client.run(id, "code_execution", {
        code: "print(open('notes.txt').read(), globals().get('counter'))",
      });
      if (isolation === "gvisor") {
        expect(resumed.stdout).toBe("kept 41\n");
        expect(resumed.stderr).toBe("");
      } else {
        expect(resumed.stdout).toBe("kept None\n");
        expect(resumed.stderr).toContain("hibernated and resumed with its files only");
      }
      const after = await listed(id);
      expect(after?.state).toBe("running");
      // Files go into a sandbox the pool had ready: no container start on the way.
      const restoredInto = (await store.getLease({ workspace, sessionId: id }))!.sandbox;
      if (isolation === "container") expect(restoredInto.createdAt).toBeLessThan(resumedAt);
      expect(after?.runtimeId).not.toBe(before);
      expect(await containerRunning(after!.runtimeId)).toBe(true);
      expect(await checkpointsOf(workspace)).toEqual([]);
      // Later calls carry no note.
      expect((await client.run(id, "code_execution", { code: "print(2)" })).stderr).toBe("");
      expect((await client.destroy(id)).status).toBe(204);
    }, 180_000);
  });

  it("a streamed first call after a files-only resume says so in its first stderr event and its result", async () => {
    const workspace = "hib-streamed";
    const client = await deployment.client(replica, workspace);
    const id = ((await client.createSession()).body as { session_id: string }).session_id;
    await client.run(id, "code_execution", { code: "counter = 1" });
    expect((await hibernate(id)).status).toBe(200);

    const token = await mintToken({ secret: SERVE_SECRET, audience: SERVE_AUDIENCE, workspace });
    const streamed = await streamExec(
      replica.url,
      id,
      { tool: "code_execution", input: { code: "print(2)" } },
      token,
    );
    expect(streamed.status, streamed.text).toBe(200);
    expect(streamed.events[0]?.event).toBe("stderr");
    expect(streamedText(streamed.events, "stderr")).toContain(FILES_NOTE);
    const result = JSON.parse(streamed.events.at(-1)!.data);
    assertContractResponse("Execute", 200, result);
    expect(result.result_block.content.stdout).toBe("2\n");
    expect(result.result_block.content.stderr).toContain(FILES_NOTE);
    // Later calls, streamed or not, carry no note.
    const later = await streamExec(
      replica.url,
      id,
      { tool: "code_execution", input: { code: "print(3)" } },
      token,
    );
    expect(streamedText(later.events, "stderr")).toBe("");
    expect((await client.destroy(id)).status).toBe(204);
  }, 120_000);

  it("calls arriving together wait for one resume", async () => {
    const workspace = "hib-together";
    const client = await deployment.client(replica, workspace);
    const id = ((await client.createSession()).body as { session_id: string }).session_id;
    await client.run(id, "bash_code_execution", { command: "echo 1 > n" });
    expect((await hibernate(id)).status).toBe(200);
    const outs = await Promise.all(
      Array.from({ length: 4 }, () => client.run(id, "bash_code_execution", { command: "cat n" })),
    );
    expect(outs.map((out) => out.stdout)).toEqual(["1\n", "1\n", "1\n", "1\n"]);
    const sandboxes = (await deployment.containers()).filter((c) => c.running);
    const lease = await store.getLease({ workspace, sessionId: id });
    expect(sandboxes.filter((c) => c.sandboxId === lease!.sandbox.sandboxId)).toHaveLength(1);
    await client.destroy(id);
  }, 120_000);

  it("never reaches another workspace's session, and refuses one with a call in flight", async () => {
    const owner = await deployment.client(replica, "hib-owner");
    const stranger = await deployment.client(replica, "hib-stranger");
    const id = ((await owner.createSession()).body as { session_id: string }).session_id;
    // An operator naming the wrong workspace finds nothing.
    expect((await hibernate(id, "hib-stranger")).status).toBe(404);
    const running = owner.run(id, "code_execution", { code: "import time\ntime.sleep(3)" });
    await waitFor(
      async () => ((await store.getLease({ workspace: "hib-owner", sessionId: id }))?.activeCalls ?? 0) > 0,
      5_000,
      "the call in flight",
    );
    const busy = await hibernate(id);
    expect(busy.status).toBe(409);
    expect((busy.body.detail as { code: string }).code).toBe("session.busy");
    await running;
    expect((await hibernate(id)).status).toBe(200);
    // Another tenant's token neither sees it nor wakes it.
    expect((await stranger.getSession(id)).status).toBe(404);
    expect((await stranger.exec(id, { tool: "code_execution", input: { code: "print(1)" } })).status).toBe(
      404,
    );
    expect((await listed(id))?.state).toBe("hibernated");
    await owner.destroy(id);
  }, 120_000);

  it("ending a hibernated session deletes its checkpoint", async () => {
    const workspace = "hib-ended";
    const client = await deployment.client(replica, workspace);
    const id = ((await client.createSession()).body as { session_id: string }).session_id;
    expect((await hibernate(id)).status).toBe(200);
    expect(await checkpointsOf(workspace)).toEqual([id]);
    expect((await client.destroy(id)).status).toBe(204);
    await waitFor(
      async () => (await checkpointsOf(workspace)).length === 0,
      10_000,
      "the checkpoint deleted",
    );
    expect((await client.getSession(id)).status).toBe(404);
    expect((await client.exec(id, { tool: "code_execution", input: { code: "print(1)" } })).status).toBe(404);
  }, 120_000);

  it("keeps a workspace within maxHibernatedSessions, and hibernates idle sessions by policy", async () => {
    const workspace = "hib-policy";
    await setPolicy(workspace, { maxHibernatedSessions: 1, hibernateAfterIdleSeconds: 5 });
    const client = await deployment.client(replica, workspace);
    const first = ((await client.createSession()).body as { session_id: string }).session_id;
    const second = ((await client.createSession()).body as { session_id: string }).session_id;
    expect((await hibernate(first)).status).toBe(200);
    const refused = await hibernate(second);
    expect(refused.status).toBe(429);
    expect((refused.body.detail as { code: string }).code).toBe("quota.hibernated_sessions");
    // Refused, it runs on untouched.
    expect((await client.run(second, "code_execution", { code: "print(3)" })).stdout).toBe("3\n");
    // Once the first resumes, the second may hibernate: by itself, after 5 s idle.
    await client.run(first, "code_execution", { code: "print(4)" });
    await waitFor(async () => (await listed(second))?.state === "hibernated", 45_000, "idle hibernation");
    expect((await client.run(second, "code_execution", { code: "print(5)" })).stdout).toBe("5\n");
    await client.destroy(first);
    await client.destroy(second);
    // Each checkpoint saved is metered: the workspace's usage counts them and their bytes.
    const usage = await admin("GET", `/usage?workspace=${workspace}&by=hour`);
    expect(usage.status, JSON.stringify(usage.body)).toBe(200);
    const totals = usage.body.totals as { hibernations: number; checkpointBytes: number };
    expect(totals.hibernations).toBeGreaterThanOrEqual(2);
    expect(totals.checkpointBytes).toBeGreaterThan(0);
  }, 120_000);
  // Last: the killed replica may have held the deployment's background jobs, which BullMQ
  // hands to a live replica only once it finds them stalled (about 30 s).
  it("a replica killed -9 while it saves leaves no orphan: another replica serves the session within seconds", async () => {
    const workspace = "hib-crash";
    const victim = await deployment.startReplica();
    const client = await deployment.client(victim, workspace);
    const id = ((await client.createSession()).body as { session_id: string }).session_id;
    await client.run(id, "bash_code_execution", { command: "echo kept > f" });
    const key = { workspace, sessionId: id };
    const container = (await store.getLease(key))!.sandbox.sandboxId;
    void fetch(`${victim.url}/admin/v1/sessions/${id}/hibernate`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}` },
    }).catch(() => undefined);
    await waitFor(
      async () => (await store.getLease(key))?.hibernation?.phase === "saving",
      10_000,
      "the save to begin",
      5,
    );
    victim.process.kill("SIGKILL");

    // On the surviving replica the call waits out the dead replica's claim, then runs.
    const survivor = await deployment.client(replica, workspace);
    const began = Date.now();
    const seen = await survivor.run(id, "bash_code_execution", { command: "cat f" });
    expect(seen.stdout).toBe("kept\n");
    expect(Date.now() - began).toBeLessThan(30_000);
    const lease = await store.getLease(key);
    expect(lease?.hibernation).toBeUndefined();
    // No checkpoint left, and every running container of the deployment is accounted for.
    await waitFor(async () => (await checkpointsOf(workspace)).length === 0, 10_000, "no checkpoint left");
    await waitFor(
      async () => {
        const known = new Set([lease!.sandbox.sandboxId]);
        for (const pool of ["default", "gv"]) {
          for (const idle of await store.listIdle(pool)) known.add(idle.sandboxId);
          for (const parked of await store.listParked(pool)) known.add(parked.sandboxId);
          for (const leased of await store.listLeases()) known.add(leased.sandbox.sandboxId);
        }
        const running = (await deployment.containers()).filter((c) => c.running).map((c) => c.sandboxId);
        return running.every((sandboxId) => known.has(sandboxId));
      },
      20_000,
      "every container accounted for",
    );
    expect(lease?.sandbox.sandboxId).toBe(container);
    expect((await survivor.destroy(id)).status).toBe(204);
    expect(await store.getLease(key)).toBeUndefined();
  }, 120_000);
});
