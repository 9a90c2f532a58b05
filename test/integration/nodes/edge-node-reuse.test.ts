/**
 * Sandbox reuse with roles edge and node, as production runs them (`sandpool serve --role
 * edge` and `--role node`, Redis, Postgres, the Docker engine): a session's end has its node
 * scrub its container and park it for the workspace's next session, which the edge places on
 * that node and which gets the same container with nothing of the earlier session in it. A
 * parked container never serves another workspace, and a workspace whose policy turns reuse
 * off gets a fresh one every time. (A recycle asked for the wrong workspace is refused:
 * node-api-hostile.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { adminRequest } from "../../support/admin-api.js";
import type { CliServer } from "../../support/cli.js";
import type { ContractClient } from "../../support/contract-client.js";
import { startEdgeServer, startNodeServer } from "../../support/edge-node-servers.js";
import {
  createServeDeployment,
  SERVE_AUDIENCE,
  SERVE_SECRET,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { waitFor } from "../../support/wait-for.js";

const available = await serveStackAvailable();

const SECRET = "edge-node-reuse-secret-0123456789-abcdefghij";
const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 1
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
  lostAfterMs: 5000
`;

/** Leaves something where a session can: each is checked gone in the next session. */
const LITTER = [
  "echo secret > secret.txt",
  "echo secret > /tmp/secret",
  "setsid nohup sleep 4242 >/dev/null 2>&1 &",
  "echo littered",
].join("\n");
const LOOK = [
  "echo files=$(ls -A | wc -l)",
  "echo tmp=$(ls -A /tmp | wc -l)",
  "echo sleepers=$(ps -eo args | grep -c '^sleep 4242')",
].join("\n");

describe.skipIf(!available)("sandbox reuse through an edge and a node", () => {
  let deployment: ServeDeployment;
  let node: CliServer;
  let edge: CliServer;
  let adminToken: string;

  beforeAll(async () => {
    deployment = await createServeDeployment(CONFIG);
    node = await startNodeServer(deployment, "node-one", SECRET);
    edge = await startEdgeServer(deployment, SECRET);
    adminToken = await mintToken({
      secret: SERVE_SECRET,
      audience: SERVE_AUDIENCE,
      workspace: "ops",
      admin: true,
    });
  }, 180_000);
  afterAll(async () => {
    await Promise.all([node, edge].map((server) => server?.stop(30_000).catch(() => undefined)));
    await deployment?.close();
  }, 120_000);

  const admin = (method: string, path: string, body?: unknown) =>
    adminRequest(edge.url, adminToken, method, path, body === undefined ? {} : { body });

  /** The container serving a session, as the admin API lists it. */
  async function containerOf(workspace: string, sessionId: string): Promise<string> {
    const listed = await admin("GET", `/sessions?workspace=${workspace}`);
    expect(listed.status, listed.text).toBe(200);
    const item = (listed.body as { items: { id: string; runtimeId: string }[] }).items.find(
      (session) => session.id === sessionId,
    );
    if (!item) throw new Error(`session ${sessionId} is not listed`);
    return item.runtimeId;
  }

  async function oneSession(client: ContractClient, workspace: string) {
    const created = await client.createSession();
    expect(created.status, created.text).toBe(201);
    const id = (created.body as { session_id: string }).session_id;
    return { id, container: await containerOf(workspace, id) };
  }

  /** The node's parked sandboxes of the pool, from its metrics. */
  async function parkedOnNode(): Promise<number> {
    const text = await (await fetch(`${node.url}/metrics`)).text();
    const line = /sandpool_node_sandboxes\{node="node-one",pool="default",state="parked"\} (\d+)/.exec(text);
    if (!line) throw new Error("the node reports no parked state");
    return Number(line[1]);
  }

  async function waitParked(count: number) {
    await waitFor(async () => (await parkedOnNode()) === count, 30_000, `${count} parked on the node`).catch(
      (error: Error) => {
        throw new Error(`${error.message}; the node said: ${node.output().stderr.slice(-3000)}`);
      },
    );
  }

  let parkedContainer: string | undefined;

  it("gives a workspace's next session the container of its last, with nothing of it left", async () => {
    const client = await deployment.client(edge, "reuser");
    const first = await oneSession(client, "reuser");
    expect((await client.run(first.id, "bash_code_execution", { command: LITTER })).stdout).toContain(
      "littered",
    );
    await client.run(first.id, "code_execution", { code: "remembered = 41" });
    expect((await client.destroy(first.id)).status).toBe(204);
    await waitParked(1);

    const second = await oneSession(client, "reuser");
    expect(second.container).toBe(first.container);
    expect(await parkedOnNode()).toBe(0);
    const seen = await client.run(second.id, "bash_code_execution", { command: LOOK });
    expect(seen.stdout).toBe("files=0\ntmp=0\nsleepers=0\n");
    const state = await client.run(second.id, "code_execution", { code: "print('remembered' in globals())" });
    expect(state.stdout).toBe("False\n");
    expect((await client.getSession(first.id)).status).toBe(404);
    expect((await client.destroy(second.id)).status).toBe(204);
    await waitParked(1);
    parkedContainer = second.container;
  }, 120_000);

  it("never gives a parked container to another workspace, which takes its place at the cap", async () => {
    expect(parkedContainer).toBeDefined();
    const other = await deployment.client(edge, "other-ws");
    // More sessions than the pool has places beside the parked one: the last takes its place
    // (the parked container destroyed, a fresh one started), never the container itself.
    const theirs: { id: string; container: string }[] = [];
    for (let i = 0; i < 4; i++) theirs.push(await oneSession(other, "other-ws"));
    for (const session of theirs) expect(session.container).not.toBe(parkedContainer);
    expect(await parkedOnNode()).toBe(0);
    const id = parkedContainer!.split(":").at(-1)!;
    await waitFor(
      async () => !(await deployment.containers()).some((c) => id.startsWith(c.id) || c.id.startsWith(id)),
      30_000,
      "the parked container destroyed",
    );
    for (const session of theirs) expect((await other.destroy(session.id)).status).toBe(204);
    // Each parked for other-ws, as far as the pool's places go.
    await waitFor(async () => (await parkedOnNode()) >= 1, 30_000, "other-ws's sandboxes parked");
  }, 240_000);

  it("starts a fresh container for every session of a workspace whose policy turns reuse off", async () => {
    const policy = await admin("PUT", "/workspaces/fresh-only/policy", { sandboxReuse: false });
    expect(policy.status, policy.text).toBe(200);
    expect((policy.body as { effective: { sandboxReuse: boolean } }).effective.sandboxReuse).toBe(false);
    const client = await deployment.client(edge, "fresh-only");
    const first = await oneSession(client, "fresh-only");
    const parkedBefore = await parkedOnNode();
    expect((await client.destroy(first.id)).status).toBe(204);
    const id = first.container.split(":").at(-1)!;
    await waitFor(
      async () => !(await deployment.containers()).some((c) => id.startsWith(c.id) || c.id.startsWith(id)),
      30_000,
      "the first container destroyed",
    );
    expect(await parkedOnNode()).toBeLessThanOrEqual(parkedBefore);
    const second = await oneSession(client, "fresh-only");
    expect(second.container).not.toBe(first.container);
    expect((await client.destroy(second.id)).status).toBe(204);
  }, 120_000);
});
