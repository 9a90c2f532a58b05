/**
 * Hibernation through `sandpool serve --role edge` and `--role node` with node-local
 * checkpoints (`hibernate.shared: false`, the default; docs/hibernate.md): each node keeps its
 * checkpoints in a directory of its own, so a hibernated session resumes on the node holding
 * its checkpoint alone. While that node is away (stopped: first unreachable, then lost) a
 * call on the session answers 503 `session.resume_failed` with Retry-After, in the contract's
 * error shape; the session stays hibernated, its checkpoint and lease kept, and nothing is
 * asked of the other node. Once the node is back the next call resumes the session there,
 * its files in place. Plain containers (files checkpoints): no gVisor needed.
 */
import { mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import type { CliServer } from "../../support/cli.js";
import { assertSchema } from "../../support/contract.js";
import { containerRunning } from "../../support/docker-suite.js";
import { edgeAdmin, startEdgeServer, startNodeServer } from "../../support/edge-node-servers.js";
import {
  createServeDeployment,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { waitFor } from "../../support/wait-for.js";

const available = await serveStackAvailable();
const SECRET = "edge-node-local-checkpoints-secret-0123456789";
const FILES_NOTE = "hibernated and resumed with its files only";
const NODES = ["node-one", "node-two"] as const;

/** What edge and nodes share; each node adds its own checkpoint directory. */
const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 2
    maxTotal: 4
    coldStartTimeoutMs: 60000
runtime:
  docker:
    preloadModules: []
intervals:
  reapMs: 500
  reconcileMs: 5000
  orphanGraceMs: 70000
node:
  heartbeatMs: 500
  lostAfterMs: 3000
`;

const nodeConfig = (checkpointDir: string) => `${CONFIG}
hibernate:
  checkpointDir: ${checkpointDir}
  shared: false
`;

interface SessionItem {
  id: string;
  state: string;
  checkpoint?: { kind: string; bytes: number };
}

describe.skipIf(!available)("hibernation with node-local checkpoints, the holding node away", () => {
  let deployment: ServeDeployment;
  const nodes = new Map<string, CliServer>();
  /** Each node's own config file and checkpoint directory. */
  const own = new Map<string, { configFile: string; checkpointDir: string }>();
  let edge: CliServer;
  let store: RedisCoordinationStore;
  let admin: Awaited<ReturnType<typeof edgeAdmin>>;

  const startNode = async (id: string) => {
    const { configFile } = own.get(id)!;
    nodes.set(id, await startNodeServer(deployment, id, SECRET, { configFile }));
  };

  beforeAll(async () => {
    deployment = await createServeDeployment(`${CONFIG}\nhibernate:\n  shared: false\n`);
    const root = await mkdtemp(path.join(tmpdir(), "sp-edge-local-hib-"));
    for (const id of NODES) {
      const checkpointDir = path.join(root, id, "checkpoints");
      const configFile = path.join(root, `${id}.yaml`);
      await writeFile(configFile, nodeConfig(checkpointDir));
      own.set(id, { configFile, checkpointDir });
    }
    await Promise.all(NODES.map(startNode));
    edge = await startEdgeServer(deployment, SECRET);
    store = await deployment.store();
    admin = await edgeAdmin(() => edge.url);
  }, 240_000);
  afterAll(async () => {
    await Promise.all([edge, ...nodes.values()].map((server) => server?.stop(30_000).catch(() => undefined)));
    await deployment?.close();
  }, 120_000);

  /**
   * How many nodes the edge itself sees in `state` (its directory, read from the registry
   * every heartbeat): what it routes by, which may lag the registry by a heartbeat.
   */
  const edgeSees = async (state: "ready" | "lost") => {
    const metrics = await (await fetch(`${edge.url}/metrics`)).text();
    const line = metrics.split("\n").find((row) => row.startsWith(`sandpool_nodes{state="${state}"}`));
    return Number(line?.split(" ").at(-1) ?? Number.NaN);
  };

  const listed = async (workspace: string, id: string) =>
    ((await admin("GET", `/sessions?workspace=${workspace}`)).body.items as SessionItem[]).find(
      (item) => item.id === id,
    );

  async function checkpointsOn(nodeId: string, workspace: string): Promise<string[]> {
    const hex = Buffer.from(workspace).toString("hex");
    return (await readdir(path.join(own.get(nodeId)!.checkpointDir, hex)).catch(() => [] as string[])).filter(
      (dir) => !dir.startsWith("."),
    );
  }

  it("answers 503 session.resume_failed while the checkpoint's node is away, keeps the session, and resumes it once the node is back", async () => {
    const workspace = "edge-local-hib";
    const client = await deployment.client(edge, workspace);
    const created = await client.createSession();
    expect(created.status).toBe(201);
    const id = (created.body as { session_id: string }).session_id;
    await client.run(id, "code_execution", { code: "open('kept.txt', 'w').write('kept')" });
    expect((await client.putFile(id, "uploaded bytes", { filename: "upload.txt" })).status).toBe(201);
    const lease = (await store.getLease({ workspace, sessionId: id }))!;

    const hibernated = await admin("POST", `/sessions/${id}/hibernate`);
    expect(hibernated.status, JSON.stringify(hibernated.body)).toBe(200);
    expect((hibernated.body.hibernated as SessionItem).checkpoint?.kind).toBe("files");
    expect(await containerRunning(lease.sandbox.runtimeId)).toBe(false);
    const holder = (await store.getLease({ workspace, sessionId: id }))!.hibernation!.checkpoint.node!;
    expect(holder).toBe(lease.node);
    const other = NODES.find((node) => node !== holder)!;
    // Node-local: the checkpoint is in its node's directory alone.
    expect(await checkpointsOn(holder, workspace)).toEqual([id]);
    expect(await checkpointsOn(other, workspace)).toEqual([]);

    await nodes.get(holder)!.stop(30_000);
    nodes.delete(holder);
    const refusedWhileAway = async (when: string) => {
      // client.exec checks the answer against the contract (the Error schema for a 503).
      const answer = await client.exec(id, {
        tool: "bash_code_execution",
        input: { command: "cat kept.txt" },
      });
      expect(answer.status, `${when}: ${answer.text}`).toBe(503);
      assertSchema("Error", answer.body);
      expect((answer.body as { detail: { code: string } }).detail.code).toBe("session.resume_failed");
      expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
      // Still hibernated, its lease and checkpoint kept on the node that is away.
      expect((await listed(workspace, id))?.state, when).toBe("hibernated");
      const kept = (await store.getLease({ workspace, sessionId: id }))!;
      expect(kept.hibernation?.phase, when).toBe("saved");
      expect(kept.hibernation?.checkpoint.node).toBe(holder);
      expect(await checkpointsOn(holder, workspace)).toEqual([id]);
    };
    // Stopped but not yet found lost: unreachable.
    await refusedWhileAway("unreachable");
    await waitFor(
      async () => (await edgeSees("lost")) === 1,
      20_000,
      "the edge to find the stopped node lost",
    );
    await refusedWhileAway("lost");
    // Asked of no other node: it holds nothing of the session's.
    expect(await checkpointsOn(other, workspace)).toEqual([]);
    expect((await store.getLease({ workspace, sessionId: id }))!.node).toBe(holder);

    // The node comes back (same id, same directory): the next call resumes the session there.
    await startNode(holder);
    await waitFor(
      async () => (await edgeSees("ready")) === 2,
      20_000,
      "the edge to see the node ready again",
    );
    const resumed = await client.run(id, "bash_code_execution", { command: "cat kept.txt" });
    expect(resumed.stdout).toBe("kept");
    expect(resumed.stderr).toContain(FILES_NOTE);
    const running = (await store.getLease({ workspace, sessionId: id }))!;
    expect(running.hibernation).toBeUndefined();
    expect(running.node).toBe(holder);
    expect(await containerRunning(running.sandbox.runtimeId)).toBe(true);
    const uploaded = await client.getFile(id, "upload.txt");
    expect(uploaded.status).toBe(200);
    expect(uploaded.text).toBe("uploaded bytes");
    const note = await client.run(id, "code_execution", { code: "print(open('kept.txt').read())" });
    expect(note.stdout).toBe("kept\n");
    expect((await listed(workspace, id))?.state).toBe("running");
    // Resumed: its checkpoint is deleted.
    await waitFor(
      async () => (await checkpointsOn(holder, workspace)).length === 0,
      15_000,
      "the checkpoint to go",
    );
    expect((await client.destroy(id)).status).toBe(204);
  }, 240_000);
});
