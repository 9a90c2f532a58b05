/**
 * Scaling out across test hosts: two hosts (network namespaces, each its own dockerd), one
 * `sandpool serve --role node` in each (the built CLI, DOCKER_HOST = its engine, Redis and
 * Postgres through relayLoopback), two `--role edge` in the root namespace.
 *
 * - the contract flow (create, every tool, files, destroy; answers validated against the
 *   contract schemas) through one edge, with sessions on each node;
 * - a session created through one edge is used and destroyed through the other;
 * - a drained node receives no new lease (admin API), and takes them again once undrained;
 * - kill -9 of a node: a call in flight answers 502 sandbox.unreachable, later calls 404,
 *   usage closed with reason node_lost; once it returns, no lease, slot or container of
 *   those sessions is left.
 *
 * Every wait is bounded. Needs root, dockerd, Postgres and Redis: fails under CI=true.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../src/auth/dev-keys.js";
import type { RedisCoordinationStore } from "../../src/store/coordination/redis/redis-store.js";
import { openPostgres } from "../../src/store/sql/open-database.js";
import { postgresAvailable } from "../integration/store/databases.js";
import { adminApi } from "../support/admin-api.js";
import { type CliServer, cliPath, runCli, startCliServer } from "../support/cli.js";
import type { ContractClient } from "../support/contract-client.js";
import { redisAvailable } from "../support/redis.js";
import {
  createServeDeployment,
  SERVE_AUDIENCE,
  SERVE_SECRET,
  type ServeDeployment,
} from "../support/serve-deployment.js";
import {
  type HostProcess,
  startTestHosts,
  type TestHosts,
  testHostsAvailable,
} from "../support/test-hosts.js";
import { waitFor } from "../support/wait-for.js";

const available = postgresAvailable && (await redisAvailable()) && (await testHostsAvailable());
const NODE_SECRET = "multihost-node-secret-0123456789-abcdefghijkl";
const NODE_PORT = 8091;
const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 2
    maxTotal: 8
    coldStartTimeoutMs: 60000
intervals:
  reapMs: 500
  reconcileMs: 3000
  orphanGraceMs: 70000
node:
  heartbeatMs: 500
  lostAfterMs: 3000
`;

describe.skipIf(!available)("edges and nodes across test hosts", () => {
  let hosts: TestHosts;
  let deployment: ServeDeployment;
  const nodes: HostProcess[] = [];
  let edges: CliServer[] = [];
  let store: RedisCoordinationStore;
  let nodeEnv: (index: number) => NodeJS.ProcessEnv;

  const client = (edge: number, workspace: string): Promise<ContractClient> =>
    deployment.client(edges[edge]!, workspace);
  const nodeOf = async (workspace: string, sessionId: string) =>
    (await store.getLease({ workspace, sessionId }))?.node;
  const startNode = async (index: number) => {
    const host = hosts.host(index);
    const node = host.spawn(
      process.execPath,
      [cliPath, "serve", "--role", "node", "--config", deployment.configFile],
      {
        env: nodeEnv(index),
        label: `node-${index}`,
      },
    );
    await node.waitForOutput(/listening on/, 90_000);
    return node;
  };
  const nodeContainers = async (index: number) => {
    const listed = await hosts.host(index).engine.listContainers({
      all: true,
      filters: { label: [`sandpool.deployment=${deployment.name}`] },
    });
    return listed.map((container) => container.Labels["sandpool.sandbox"]);
  };

  beforeAll(async () => {
    hosts = await startTestHosts(2);
    deployment = await createServeDeployment(CONFIG);
    const redis = await hosts.relayLoopback(6379);
    const postgres = await hosts.relayLoopback(5432);
    const databaseUrl = new URL(deployment.databaseUrl);
    databaseUrl.hostname = postgres.host;
    databaseUrl.port = String(postgres.port);
    nodeEnv = (index) => {
      const host = hosts.host(index);
      return {
        ...deployment.env,
        DATABASE_URL: databaseUrl.toString(),
        REDIS_URL: `redis://${redis.host}:${redis.port}`,
        DOCKER_HOST: host.dockerHost,
        SANDPOOL_NODE_ID: `node-${index}`,
        SANDPOOL_NODE_HOST: host.address,
        SANDPOOL_NODE_PORT: String(NODE_PORT),
        SANDPOOL_NODE_ADVERTISE_URL: `http://${host.address}:${NODE_PORT}`,
        SANDPOOL_NODE_SECRETS: NODE_SECRET,
      };
    };
    nodes.push(...(await Promise.all([startNode(0), startNode(1)])));
    edges = await Promise.all(
      [0, 1].map(() =>
        startCliServer(["serve", "--role", "edge", "--config", deployment.configFile], undefined, {
          env: { ...deployment.env, SANDPOOL_NODE_SECRETS: NODE_SECRET },
          timeoutMs: 60_000,
        }),
      ),
    );
    store = await deployment.store();
    // Each node warms its share (one of minIdle 2) before the placements below count on it.
    const admin = adminApi(
      edges[0]!.url,
      await mintToken({ secret: SERVE_SECRET, audience: SERVE_AUDIENCE, admin: true }),
    );
    await waitFor(
      async () => {
        const { body } = await admin("GET", "/nodes");
        const items = (body as { items: { state: string; freeWarm: { default?: number } }[] }).items;
        return (
          items.length === 2 &&
          items.every((node) => node.state === "ready" && (node.freeWarm.default ?? 0) >= 1)
        );
      },
      120_000,
      "both nodes ready with a warm sandbox",
    );
  }, 300_000);

  afterAll(async () => {
    await Promise.all(edges.map((edge) => edge.stop(30_000).catch(() => undefined)));
    await Promise.all(nodes.map((node) => node.kill("SIGTERM", 20_000).catch(() => undefined)));
    await deployment?.close().catch(() => undefined);
    await hosts?.close();
  }, 180_000);

  it("serves the contract flow through one edge with sessions on each node", async () => {
    const one = await client(0, "team-flow");
    const placed = new Map<string, string>();
    for (let attempt = 0; attempt < 4 && new Set(placed.values()).size < 2; attempt++) {
      const created = await one.createSession();
      expect(created.status).toBe(201);
      const id = (created.body as { session_id: string }).session_id;
      placed.set(id, (await nodeOf("team-flow", id))!);
    }
    expect(new Set(placed.values())).toEqual(new Set(["node-0", "node-1"]));
    for (const id of placed.keys()) {
      expect((await one.getSession(id)).status).toBe(200);
      await one.run(id, "code_execution", { code: "x = 6 * 7" });
      expect((await one.run(id, "code_execution", { code: "print(x)" })).stdout).toBe("42\n");
      expect((await one.run(id, "bash_code_execution", { command: "echo -n on-$((1+1))" })).stdout).toBe(
        "on-2",
      );
      const edited = await one.exec(id, {
        tool: "text_editor_code_execution",
        input: { command: "create", path: "notes.txt", file_text: "on a node\n" },
      });
      expect(edited.status).toBe(200);
      expect((await one.run(id, "bash_code_execution", { command: "cat notes.txt" })).stdout).toBe(
        "on a node\n",
      );
      expect((await one.putFile(id, "abc", { path: "data/in.txt" })).status).toBe(201);
      expect((await one.listFiles(id, "data")).status).toBe(200);
      expect((await one.getFile(id, "data/in.txt")).text).toBe("abc");
      expect((await one.destroy(id)).status).toBe(204);
      expect((await one.getSession(id)).status).toBe(404);
    }
  }, 180_000);

  it("uses and destroys through one edge a session created through the other", async () => {
    const created = await (await client(0, "team-cross")).createSession();
    expect(created.status).toBe(201);
    const id = (created.body as { session_id: string }).session_id;
    const two = await client(1, "team-cross");
    expect((await two.run(id, "code_execution", { code: "print('via two')" })).stdout).toBe("via two\n");
    expect((await two.destroy(id)).status).toBe(204);
    expect((await (await client(0, "team-cross")).getSession(id)).status).toBe(404);
  }, 60_000);

  it("places no new lease on a drained node, and does again once it is undrained", async () => {
    const token = await mintToken({ secret: SERVE_SECRET, audience: SERVE_AUDIENCE, admin: true });
    const admin = adminApi(edges[1]!.url, token);
    const cli = (args: string[]) =>
      runCli([...args, "--url", edges[1]!.url, "--token", token], {
        env: { PATH: process.env.PATH },
        timeoutMs: 30_000,
      });
    const drained = await cli(["nodes", "drain", "node-1"]);
    expect(drained.code).toBe(0);
    expect(drained.stdout).toMatch(/draining node node-1/);
    expect((await admin("POST", "/nodes/no-such-node/drain")).status).toBe(404);
    // The edges see the drain at their next read of the registry.
    await waitFor(
      async () => {
        const { body } = await admin("GET", "/nodes");
        return (body as { items: { id: string; state: string }[] }).items.some(
          (node) => node.id === "node-1" && node.state === "draining",
        );
      },
      10_000,
      "node-1 draining",
    );
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const one = await client(0, "team-drain");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await one.createSession();
      expect(created.status).toBe(201);
      const id = (created.body as { session_id: string }).session_id;
      ids.push(id);
      expect(await nodeOf("team-drain", id)).toBe("node-0");
    }
    for (const id of ids) expect((await one.destroy(id)).status).toBe(204);
    const listed = await cli(["nodes", "list"]);
    expect(listed.stdout).toMatch(/node-0\s+ready/);
    expect(listed.stdout).toMatch(/node-1\s+draining/);
    expect((await admin("POST", "/nodes/node-1/undrain")).status).toBe(200);
    await waitFor(
      async () => {
        const { body } = await admin("GET", "/nodes");
        return (body as { items: { id: string; state: string }[] }).items.every(
          (node) => node.state === "ready",
        );
      },
      10_000,
      "node-1 ready again",
    );
  }, 120_000);

  it("ends a killed node's sessions (502 in flight, then 404, node_lost) and leaves nothing once it returns", async () => {
    // A workspace per attempt: an ended session's sandbox is parked on its node, and the
    // workspace's next session would be placed there again to reuse it.
    let workspace = "team-lost";
    let one = await client(0, workspace);
    let id: string | undefined;
    for (let attempt = 0; attempt < 6 && !id; attempt++) {
      workspace = `team-lost-${attempt}`;
      one = await client(0, workspace);
      const created = await one.createSession();
      const candidate = (created.body as { session_id: string }).session_id;
      if ((await nodeOf(workspace, candidate)) === "node-1") id = candidate;
      else await one.destroy(candidate);
    }
    expect(id).toBeDefined();
    const sandboxId = (await store.getLease({ workspace, sessionId: id! }))!.sandbox.sandboxId;
    const edgeAdmin = adminApi(
      edges[0]!.url,
      await mintToken({ secret: SERVE_SECRET, audience: SERVE_AUDIENCE, admin: true }),
    );
    const capacities = async () =>
      ((await edgeAdmin("GET", "/nodes")).body as { items: { capacity: { default?: number } }[] }).items.map(
        (n) => n.capacity.default,
      );
    // Each node sizes its share from the ready nodes it saw at its last heartbeat: after the
    // drain and undrain above, both take a beat to be back at half the pool each.
    await waitFor(
      async () => JSON.stringify(await capacities()) === "[4,4]",
      10_000,
      "the pool halved again",
    );
    expect(await capacities()).toEqual([4, 4]);
    const inFlight = one.exec(id!, { tool: "bash_code_execution", input: { command: "sleep 20" } });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await nodes[1]!.kill("SIGKILL");
    const answer = await inFlight;
    expect(answer.status).toBe(502);
    expect((answer.body as { detail: { code: string } }).detail.code).toBe("sandbox.unreachable");
    // Once the edges find it lost (no heartbeat for lostAfterMs), its sessions are ended.
    await waitFor(async () => (await one.getSession(id!)).status === 404, 15_000, "the session to be ended");
    expect((await one.exec(id!, { tool: "bash_code_execution", input: { command: "true" } })).status).toBe(
      404,
    );
    expect(await store.getLease({ workspace, sessionId: id! })).toBeUndefined();
    expect(await store.countSlots(workspace, Date.now())).toBe(0);

    // Its share of the pool moves to the node left: maxTotal 8 and minIdle 2 over one ready node
    // (it was 4 and 1 of them with two nodes), and that node warms it.
    await waitFor(
      async () => {
        const { body } = await edgeAdmin("GET", "/nodes");
        const items = (body as { items: { id: string; state: string; freeWarm: { default?: number } }[] })
          .items;
        return (
          items.some((n) => n.id === "node-1" && n.state === "lost") &&
          items.some((n) => n.id === "node-0" && (n.freeWarm.default ?? 0) >= 2)
        );
      },
      60_000,
      "node-1 lost and node-0 warming the whole pool",
    );

    // The node returns: its reconciliation destroys the sandbox no live lease holds.
    nodes[1] = await startNode(1);
    await waitFor(
      async () => !(await nodeContainers(1)).includes(sandboxId),
      60_000,
      "the lost session's container to go",
    );
    const db = openPostgres(deployment.databaseUrl);
    try {
      await waitFor(
        async () => {
          const rows = await db
            .selectFrom("usage_events")
            .selectAll()
            .where("session_id", "=", id!)
            .where("kind", "=", "session_ended")
            .execute();
          return rows.length > 0;
        },
        15_000,
        "the session's end in the usage records",
      );
      const ended = await db
        .selectFrom("usage_events")
        .selectAll()
        .where("session_id", "=", id!)
        .where("kind", "=", "session_ended")
        .execute();
      expect(ended.map((row) => (row.detail as { reason?: string }).reason)).toContain("node_lost");
    } finally {
      await db.destroy();
    }
  }, 180_000);
});
