/**
 * Hibernate and resume through `sandpool serve --role edge` and `--role node` (issue 29,
 * docs/hibernate.md): two nodes on the local Docker engine share one checkpoint directory
 * (`hibernate.shared`, as a ReadWriteMany volume would in the chart), one edge. An operator
 * hibernates a session through the edge's admin API: the node checkpoints the sandbox into
 * its store and removes the container; the next Execute resumes it (files: the file is back
 * and the interpreter-restarted note says so; gvisor: the variable too), on the other node
 * once the one that saved it is gone. The node's hibernation endpoints refuse another
 * workspace, a memory restore counts against its node's share of the pool, and a drained
 * node's sessions hibernate and resume elsewhere.
 */
import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NodeSecrets, SIGNATURE_HEADERS } from "../../../src/roles/shared/node-signature.js";
import type { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import type { CliServer } from "../../support/cli.js";
import { containerRunning, gvisorSuiteAvailable } from "../../support/docker-suite.js";
import { edgeAdmin, startEdgeServer, startNodeServer } from "../../support/edge-node-servers.js";
import {
  createServeDeployment,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { waitFor } from "../../support/wait-for.js";

const available = (await serveStackAvailable()) && (await gvisorSuiteAvailable());
const checkpointDir = path.join(await mkdtemp(path.join(tmpdir(), "sp-edge-hib-")), "checkpoints");
const SECRET = "edge-node-hibernation-secret-0123456789-abcdef";
const FILES_NOTE = "hibernated and resumed with its files only";

const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 2
    maxTotal: 6
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
  shared: true
intervals:
  reapMs: 500
  reconcileMs: 5000
  orphanGraceMs: 70000
node:
  heartbeatMs: 500
  lostAfterMs: 3000
`;

interface SessionItem {
  id: string;
  state: string;
  checkpoint?: { kind: string; bytes: number };
}

describe.skipIf(!available)("hibernation through --role edge and --role node", () => {
  let deployment: ServeDeployment;
  const nodes = new Map<string, CliServer>();
  let edge: CliServer;
  let store: RedisCoordinationStore;
  let admin: Awaited<ReturnType<typeof edgeAdmin>>;

  const startNode = async (id: string) => {
    const node = await startNodeServer(deployment, id, SECRET);
    nodes.set(id, node);
  };

  beforeAll(async () => {
    deployment = await createServeDeployment(CONFIG);
    await Promise.all(["node-one", "node-two"].map(startNode));
    edge = await startEdgeServer(deployment, SECRET);
    store = await deployment.store();
    admin = await edgeAdmin(() => edge.url);
  }, 240_000);
  afterAll(async () => {
    await Promise.all([edge, ...nodes.values()].map((server) => server?.stop(30_000).catch(() => undefined)));
    await deployment?.close();
  }, 120_000);

  async function checkpointsOf(workspace: string): Promise<string[]> {
    const hex = Buffer.from(workspace).toString("hex");
    return (await readdir(path.join(checkpointDir, hex)).catch(() => [] as string[])).filter(
      (dir) => !dir.startsWith("."),
    );
  }

  async function openSession(workspace: string, code: string) {
    const client = await deployment.client(edge, workspace);
    const created = await client.createSession();
    expect(created.status).toBe(201);
    const id = (created.body as { session_id: string }).session_id;
    await client.run(id, "code_execution", { code });
    const lease = (await store.getLease({ workspace, sessionId: id }))!;
    return { client, id, lease };
  }

  /** A node's own count of its sandboxes of `pool` in `state` (sandpool_node_sandboxes). */
  async function nodeSandboxes(nodeId: string, pool: string, state: string): Promise<number> {
    const metrics = await (await fetch(`${nodes.get(nodeId)!.url}/metrics`)).text();
    const line = metrics
      .split("\n")
      .find(
        (row) =>
          row.startsWith("sandpool_node_sandboxes{") &&
          row.includes(`pool="${pool}"`) &&
          row.includes(`state="${state}"`),
      );
    return Number(line?.split(" ").at(-1) ?? Number.NaN);
  }

  /** A signed call to a node's API, made for `workspace`. */
  function signedNodeCall(nodeId: string, method: string, target: string, workspace: string, body?: string) {
    const headers: Record<string, string> = {
      accept: "*/*",
      [SIGNATURE_HEADERS.workspace]: encodeURIComponent(workspace),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    };
    const signed = new NodeSecrets([SECRET]).sign({ nodeId, method, target, headers, body });
    return fetch(`${nodes.get(nodeId)!.url}${target}`, {
      method,
      headers: { ...headers, ...signed.headers },
      ...(body === undefined ? {} : { body }),
    });
  }

  it("hibernates a session on its node through the edge; the next Execute resumes it with its files", async () => {
    const workspace = "edge-hib-files";
    const { client, id, lease } = await openSession(
      workspace,
      "open('notes.txt', 'w').write('kept')\ncounter = 41",
    );
    expect(lease.node).toMatch(/^node-(one|two)$/);

    const answer = await admin("POST", `/sessions/${id}/hibernate`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const view = answer.body.hibernated as SessionItem;
    expect(view.state).toBe("hibernated");
    expect(view.checkpoint?.kind).toBe("files");
    expect(view.checkpoint?.bytes).toBeGreaterThan(0);
    expect(await containerRunning(lease.sandbox.runtimeId)).toBe(false);
    expect(await checkpointsOf(workspace)).toEqual([id]);
    const saved = (await store.getLease({ workspace, sessionId: id }))!;
    expect(saved.hibernation?.checkpoint.node).toBe(lease.node);

    const resumed = await client.run(id, "code_execution", {
      code: "print(open('notes.txt').read(), globals().get('counter'))",
    });
    expect(resumed.stdout).toBe("kept None\n");
    expect(resumed.stderr).toContain(FILES_NOTE);
    const running = (await store.getLease({ workspace, sessionId: id }))!;
    expect(running.hibernation).toBeUndefined();
    expect(running.node).toBe(running.sandbox.node);
    expect(running.sandbox.endpoint).toMatch(new RegExp(`^node:${running.node}/`));
    expect(await containerRunning(running.sandbox.runtimeId)).toBe(true);
    expect(await checkpointsOf(workspace)).toEqual([]);
    expect((await client.run(id, "code_execution", { code: "print(2)" })).stderr).toBe("");
    expect((await client.destroy(id)).status).toBe(204);
  }, 180_000);

  it("refuses the node's hibernation endpoints to another workspace", async () => {
    const workspace = "edge-hib-owner";
    const { client, id, lease } = await openSession(workspace, "x = 1");
    const node = lease.node!;
    const checkpointBody = JSON.stringify({ sessionId: id, bounds: {} });
    // Another workspace is told the sandbox is unknown, and nothing is saved.
    const stranger = await signedNodeCall(
      node,
      "POST",
      `/node/v1/sandboxes/${lease.sandbox.sandboxId}/checkpoint`,
      "edge-hib-stranger",
      checkpointBody,
    );
    expect(stranger.status).toBe(404);
    expect(stranger.headers.get("x-sandpool-node-error")).toBe("session.not_found");
    expect(await containerRunning(lease.sandbox.runtimeId)).toBe(true);
    expect(await checkpointsOf(workspace)).toEqual([]);

    expect((await admin("POST", `/sessions/${id}/hibernate`)).status).toBe(200);
    const saved = (await store.getLease({ workspace, sessionId: id }))!;
    const holder = saved.hibernation!.checkpoint.node!;
    // The checkpoint is there for its workspace only; another's delete leaves it.
    expect((await signedNodeCall(holder, "GET", `/node/v1/checkpoints/${id}`, workspace)).status).toBe(200);
    expect(
      (await signedNodeCall(holder, "GET", `/node/v1/checkpoints/${id}`, "edge-hib-stranger")).status,
    ).toBe(204);
    const foreignRestore = await signedNodeCall(
      holder,
      "POST",
      "/node/v1/restores",
      "edge-hib-stranger",
      JSON.stringify({ pool: "default", sessionId: id, sandboxId: "00ff", sandboxSessionId: "s" }),
    );
    expect(foreignRestore.status).toBe(404);
    expect(foreignRestore.headers.get("x-sandpool-node-error")).toBe("session.not_found");
    // Nor for its own workspace unless its lease says that very sandbox is being restored.
    const checkpointed = saved.hibernation!.checkpoint;
    const unasked = await signedNodeCall(
      holder,
      "POST",
      "/node/v1/restores",
      workspace,
      JSON.stringify({
        pool: checkpointed.pool,
        sessionId: id,
        sandboxId: checkpointed.sandboxId,
        sandboxSessionId: checkpointed.sandboxSessionId,
      }),
    );
    expect(unasked.status).toBe(404);
    expect(unasked.headers.get("x-sandpool-node-error")).toBe("session.not_found");
    expect(
      (await signedNodeCall(holder, "POST", `/node/v1/checkpoints/${id}/delete`, "edge-hib-stranger")).status,
    ).toBe(204);
    expect(await checkpointsOf(workspace)).toEqual([id]);
    // A tenant's token for another workspace finds no session to resume.
    const other = await deployment.client(edge, "edge-hib-stranger");
    expect((await other.getSession(id)).status).toBe(404);
    // Ending the hibernated session deletes its checkpoint on the node.
    expect((await client.destroy(id)).status).toBe(204);
    await waitFor(async () => (await checkpointsOf(workspace)).length === 0, 15_000, "the checkpoint to go");
  }, 120_000);

  it("keeps a gVisor session's memory across hibernation through a node", async () => {
    const workspace = "edge-hib-gvisor";
    expect((await admin("PUT", `/workspaces/${workspace}/policy`, { isolation: "gvisor" })).status).toBe(200);
    const { client, id, lease } = await openSession(workspace, "counter = 41\nblob = bytearray(10_000_000)");
    expect(lease.pool).toBe("gv");
    const answer = await admin("POST", `/sessions/${id}/hibernate`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect((answer.body.hibernated as SessionItem).checkpoint?.kind).toBe("memory");
    expect(await containerRunning(lease.sandbox.runtimeId)).toBe(false);
    const resumed = await client.run(id, "code_execution", {
      code: "counter += 1\nprint(counter, len(blob))",
    });
    expect(resumed.stdout).toBe("42 10000000\n");
    expect(resumed.stderr).toBe("");
    const running = (await store.getLease({ workspace, sessionId: id }))!;
    expect(running.sandbox.sandboxId).toBe(lease.sandbox.sandboxId);
    expect(await containerRunning(running.sandbox.runtimeId)).toBe(true);
    expect((await client.destroy(id)).status).toBe(204);
  }, 180_000);

  it("counts a memory restore against its node's share of the pool: full everywhere, 503; room on one node, it goes there", async () => {
    const workspace = "edge-hib-gvisor-full";
    expect((await admin("PUT", `/workspaces/${workspace}/policy`, { isolation: "gvisor" })).status).toBe(200);
    // Earlier tests' gv sandboxes are destroyed by a job after their sessions end: gone first,
    // so the shares below are this test's alone.
    await waitFor(
      async () =>
        (await nodeSandboxes("node-one", "gv", "leased")) +
          (await nodeSandboxes("node-two", "gv", "leased")) ===
        0,
      90_000,
      "earlier gv sandboxes to be released",
    );
    const hibernated = await openSession(workspace, "counter = 7");
    expect(hibernated.lease.pool).toBe("gv");
    expect((await admin("POST", `/sessions/${hibernated.id}/hibernate`)).status).toBe(200);
    // The gv pool (maxTotal 2) is one sandbox per node: two sessions fill both shares.
    const first = await openSession(workspace, "x = 1");
    // Placed where the first is not once the edge has its node's heartbeat with it (a lease
    // at a full share would wait out the pool's start deadline before trying the other).
    await waitFor(
      async () =>
        ((await admin("GET", "/nodes")).body.items as { id: string; leased: number }[]).some(
          (node) => node.id === first.lease.node && node.leased >= 1,
        ),
      10_000,
      "the first filler's node to report it",
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const fillers = [first, await openSession(workspace, "x = 2")];
    expect(new Set(fillers.map((filler) => filler.lease.node)).size).toBe(2);

    // Each node refuses the restore (its share is full); the caller is told to retry, the
    // checkpoint kept.
    const refused = await hibernated.client.exec(hibernated.id, {
      tool: "code_execution",
      input: { code: "print(counter)" },
    });
    expect(refused.status, refused.text).toBe(503);
    expect((refused.body as { detail: { code: string } }).detail.code).toBe("session.resume_failed");
    expect((await store.getLease({ workspace, sessionId: hibernated.id }))?.hibernation?.phase).toBe("saved");
    expect(await checkpointsOf(workspace)).toEqual([hibernated.id]);

    // One node has room again: the restore goes there (the other, still full, refuses it).
    const [freed, kept] = fillers;
    expect((await freed!.client.destroy(freed!.id)).status).toBe(204);
    // Its sandbox is destroyed (or parked, which gives its place up) by a job, just after.
    await waitFor(
      async () => (await nodeSandboxes(freed!.lease.node!, "gv", "leased")) === 0,
      // A scrub for parking may take up to 30 s on a loaded machine.
      60_000,
      "the freed node's gv sandbox to be released",
    );
    const resumed = await hibernated.client.run(hibernated.id, "code_execution", { code: "print(counter)" });
    expect(resumed.stdout).toBe("7\n");
    const running = (await store.getLease({ workspace, sessionId: hibernated.id }))!;
    expect(running.node).toBe(freed!.lease.node);
    for (const session of [hibernated, kept!]) {
      expect((await session.client.destroy(session.id)).status).toBe(204);
    }
  }, 240_000);

  it("a drained node's idle session hibernates, and its next call resumes it on the other node", async () => {
    const workspace = "edge-hib-drain";
    const { client, id, lease } = await openSession(workspace, "open('drained.txt', 'w').write('moved')");
    const drained = lease.node!;
    expect((await admin("POST", `/nodes/${drained}/drain`)).status).toBe(200);
    try {
      await waitFor(
        async () => (await store.getLease({ workspace, sessionId: id }))?.hibernation?.phase === "saved",
        20_000,
        "the drained node's session to hibernate",
      );
      expect(await containerRunning(lease.sandbox.runtimeId)).toBe(false);
      const moved = await client.run(id, "bash_code_execution", { command: "cat drained.txt" });
      expect(moved.stdout).toBe("moved");
      const running = (await store.getLease({ workspace, sessionId: id }))!;
      expect(running.node).not.toBe(drained);
      expect(running.hibernation).toBeUndefined();
    } finally {
      expect((await admin("POST", `/nodes/${drained}/undrain`)).status).toBe(200);
    }
    expect((await client.destroy(id)).status).toBe(204);
  }, 120_000);

  it("resumes on the other node once the one that saved it is gone (a shared checkpoint directory)", async () => {
    const workspace = "edge-hib-move";
    const { client, id } = await openSession(workspace, "open('moved.txt', 'w').write('here')");
    expect((await admin("POST", `/sessions/${id}/hibernate`)).status).toBe(200);
    const holder = (await store.getLease({ workspace, sessionId: id }))!.hibernation!.checkpoint.node!;
    const other = holder === "node-one" ? "node-two" : "node-one";
    await nodes.get(holder)!.stop(30_000);
    nodes.delete(holder);
    // Its sessions are not ended when it is found lost: the hibernated one holds nothing there.
    await waitFor(
      async () =>
        ((await admin("GET", "/nodes")).body.items as { id: string; state: string }[]).some(
          (node) => node.id === holder && node.state === "lost",
        ),
      20_000,
      "the stopped node to be lost",
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await store.getLease({ workspace, sessionId: id }))?.hibernation?.phase).toBe("saved");

    // Validated against the contract (ContractClient), as every call here.
    const moved = await client.run(id, "bash_code_execution", { command: "cat moved.txt" });
    expect(moved.stdout).toBe("here");
    const running = (await store.getLease({ workspace, sessionId: id }))!;
    expect(running.node).toBe(other);
    expect((await client.destroy(id)).status).toBe(204);
  }, 180_000);
});
