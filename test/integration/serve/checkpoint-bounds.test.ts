/**
 * The checkpoint store's own bounds through `sandpool serve` (docker sandboxes, Redis,
 * Postgres; docs/hibernate.md, "The store's own bounds"): with the store's disk under
 * `hibernate.minFreeBytes` (a floor no disk meets), an operator's hibernate is refused with
 * 503 `capacity.checkpoint_space` and the reason, nothing is written to the store, the session
 * keeps running on the same container with its interpreter's state, the admin list shows the
 * refusal, and `sandpool_hibernation_refusals_total{reason="disk_free"}` counts it.
 *
 * Needs the built CLI (`npm run build`), Docker and the image, Redis and Postgres: skipped
 * with a warning locally, fails under CI=true.
 */
import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import type { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import type { CliServer } from "../../support/cli.js";
import { containerRunning } from "../../support/docker-suite.js";
import {
  createServeDeployment,
  SERVE_AUDIENCE,
  SERVE_SECRET,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";

const available = await serveStackAvailable();
const checkpointDir = path.join(await mkdtemp(path.join(tmpdir(), "sp-bounds-")), "checkpoints");

const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 0
    maxTotal: 2
    coldStartTimeoutMs: 60000
runtime:
  docker:
    preloadModules: []
hibernate:
  checkpointDir: ${checkpointDir}
  minFreeBytes: ${Number.MAX_SAFE_INTEGER}
`;

interface SessionItem {
  id: string;
  state: string;
  runtimeId: string;
  hibernationRefused?: { code: string; message: string; at: string };
}

describe.skipIf(!available)("checkpoint store bounds (serve, docker)", () => {
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

  const admin = (method: string, route: string) =>
    fetch(`${replica.url}/admin/v1${route}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}` },
    }).then(async (answer) => ({
      status: answer.status,
      retryAfter: answer.headers.get("retry-after"),
      body: (await answer.json()) as Record<string, unknown>,
    }));

  it("refuses to hibernate under the disk's free floor: the session runs on, and the list and the metric say why", async () => {
    const workspace = "bounds-a";
    const client = await deployment.client(replica, workspace);
    const created = await client.createSession();
    expect(created.status).toBe(201);
    const id = (created.body as { session_id: string }).session_id;
    await client.run(id, "code_execution", { code: "counter = 41" });
    const before = (await store.getLease({ workspace, sessionId: id }))!.sandbox.runtimeId;

    const refused = await admin("POST", `/sessions/${id}/hibernate`);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    const detail = (refused.body as { detail: { code: string; message: string } }).detail;
    expect(detail.code).toBe("capacity.checkpoint_space");
    expect(detail.message).toMatch(/hibernate\.minFreeBytes/);
    expect(detail.message).toMatch(/the session keeps running/);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);

    // Nothing was saved; the same container serves the session, its variable in place.
    const dirs = await readdir(checkpointDir).catch(() => [] as string[]);
    for (const dir of dirs) expect(await readdir(path.join(checkpointDir, dir))).toEqual([]);
    expect(await containerRunning(before)).toBe(true);
    const answer = await client.run(id, "code_execution", { code: "counter += 1\nprint(counter)" });
    expect(answer.stdout).toBe("42\n");
    expect((await store.getLease({ workspace, sessionId: id }))!.sandbox.runtimeId).toBe(before);

    const listed = await admin("GET", "/sessions");
    expect(listed.status).toBe(200);
    const item = (listed.body.items as SessionItem[]).find((session) => session.id === id);
    expect(item).toMatchObject({
      state: "running",
      runtimeId: before,
      hibernationRefused: { code: "capacity.checkpoint_space", message: detail.message },
    });
    expect(Date.parse(item!.hibernationRefused!.at)).toBeGreaterThan(0);

    const metrics = await fetch(`${replica.url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/sandpool_hibernation_refusals_total\{reason="disk_free"\} 1\b/);
    expect(metrics).toMatch(/sandpool_hibernation_refusals_total\{reason="store_bytes"\} 0\b/);
  }, 120_000);
});
