/**
 * `sandpool serve --role edge` and `--role node` as production runs them, on one machine:
 * one node on the local Docker engine, two edges. Sessions are placed on the node, every
 * call is routed there signed, and a session made through one edge is used and ended
 * through the other (its sandbox parked on the node for the workspace's next session). (Two nodes need two engines: test/multihost.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { NodeSecrets, SIGNATURE_HEADERS } from "../../../src/roles/shared/node-signature.js";
import type { CliServer } from "../../support/cli.js";
import { assertContractResponse } from "../../support/contract.js";
import { startEdgeServer, startNodeServer } from "../../support/edge-node-servers.js";
import { streamExec, streamedText } from "../../support/exec-event-stream.js";
import { redisAvailable } from "../../support/redis.js";
import { dockerAvailable, dockerImageAvailable, requireService } from "../../support/require-service.js";
import {
  createServeDeployment,
  SERVE_AUDIENCE,
  SERVE_SECRET,
  type ServeDeployment,
} from "../../support/serve-deployment.js";
import { waitFor } from "../../support/wait-for.js";
import { postgresAvailable } from "../store/databases.js";

const available =
  postgresAvailable &&
  (await redisAvailable()) &&
  (await requireService("Docker", dockerAvailable, { start: "bash scripts/start-docker.sh" })) &&
  (await requireService("the sandbox image", () => dockerImageAvailable("sandpool/sandbox:dev"), {
    start: "npm run build:sandbox-image",
  }));

const SECRET = "edge-node-test-secret-0123456789-abcdefghij";
const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 1
    maxTotal: 4
    coldStartTimeoutMs: 60000
intervals:
  reapMs: 500
  reconcileMs: 5000
  orphanGraceMs: 70000
node:
  heartbeatMs: 500
  lostAfterMs: 3000
`;

describe.skipIf(!available)("sandpool serve --role edge and --role node", () => {
  let deployment: ServeDeployment;
  let node: CliServer;
  let edges: CliServer[];

  beforeAll(async () => {
    deployment = await createServeDeployment(CONFIG);
    node = await startNodeServer(deployment, "node-one", SECRET);
    edges = await Promise.all([0, 1].map(() => startEdgeServer(deployment, SECRET)));
  }, 180_000);
  afterAll(async () => {
    await Promise.all([node, ...(edges ?? [])].map((server) => server?.stop(30_000).catch(() => undefined)));
    await deployment?.close();
  }, 120_000);

  it("answers health and metrics on the node port without a secret, and nothing else", async () => {
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
    const metrics = await (await fetch(`${node.url}/metrics`)).text();
    expect(metrics).toMatch(/sandpool_node_sandboxes\{node="node-one",pool="default",state="warm"\}/);
    const unsigned = await fetch(`${node.url}/node/v1/leases`, {
      method: "POST",
      body: '{"pool":"default"}',
    });
    expect(unsigned.status).toBe(401);
  });

  it("answers a signed request once, signing its answer; refuses its replay and another secret", async () => {
    const target = "/node/v1/sandboxes/00ff/usage";
    // fetch sends an Accept of its own unless given one: signed, it must be the one sent.
    const accept = { accept: "*/*" };
    const signed = new NodeSecrets([SECRET]).sign({
      nodeId: "node-one",
      method: "GET",
      target,
      headers: accept,
    });
    const { nonce } = signed;
    const headers = { ...accept, ...signed.headers };
    const first = await fetch(`${node.url}${target}`, { headers });
    expect(first.status).toBe(204);
    const answer = (name: string) => first.headers.get(name) ?? undefined;
    expect(new NodeSecrets([SECRET]).verifyAnswer(nonce, 204, answer)).toBeDefined();
    expect(new NodeSecrets([SECRET]).verifyAnswer(nonce, 200, answer)).toBeUndefined();
    expect(first.headers.get(SIGNATURE_HEADERS.answer)).toMatch(/^v2=/);
    expect((await fetch(`${node.url}${target}`, { headers })).status).toBe(401);
    const other = new NodeSecrets(["another-secret-of-at-least-32-bytes-long"]).sign({
      nodeId: "node-one",
      method: "GET",
      target,
      headers: accept,
    });
    expect((await fetch(`${node.url}${target}`, { headers: { ...accept, ...other.headers } })).status).toBe(
      401,
    );
  });

  it("places a session on the node and serves it through either edge", async () => {
    const one = await deployment.client(edges[0]!, "team-a");
    const two = await deployment.client(edges[1]!, "team-a");
    const created = await one.createSession();
    expect(created.status).toBe(201);
    const id = (created.body as { session_id: string }).session_id;
    const store = await deployment.store();
    const lease = await store.getLease({ workspace: "team-a", sessionId: id });
    expect(lease?.node).toBe("node-one");
    expect(lease?.sandbox.endpoint).toMatch(/^node:node-one\//);
    await one.run(id, "code_execution", { code: "x = 41" });
    expect((await two.run(id, "code_execution", { code: "print(x + 1)" })).stdout).toBe("42\n");
    expect(
      (await two.run(id, "bash_code_execution", { command: "echo -n hi > f.txt; cat f.txt" })).stdout,
    ).toBe("hi");
    // Exec event streams pass through the node as they come: the first delta before the end.
    const token = await mintToken({ secret: SERVE_SECRET, audience: SERVE_AUDIENCE, workspace: "team-a" });
    const streamed = await streamExec(
      edges[1]!.url,
      id,
      {
        tool: "code_execution",
        input: { code: "import time\nprint('first', flush=True)\ntime.sleep(1)\nprint('second')" },
      },
      token,
    );
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(streamed.endedAtMs - streamed.events[0]!.atMs).toBeGreaterThan(700);
    expect(streamedText(streamed.events, "stdout")).toBe("first\nsecond\n");
    assertContractResponse("Execute", 200, JSON.parse(streamed.events.at(-1)!.data));
    const put = await one.putFile(id, "payload", { path: "up.txt" });
    expect(put.status).toBe(201);
    const got = await two.getFile(id, "up.txt");
    expect(got.text).toBe("payload");
    expect((await two.destroy(id)).status).toBe(204);
    expect((await one.getSession(id)).status).toBe(404);
    // The node parks the sandbox for team-a's next session (a job on an edge asks it to): its
    // container stays (edge-node-reuse.test.ts; with reuse off it is destroyed).
    await waitFor(
      async () =>
        /sandpool_node_sandboxes\{node="node-one",pool="default",state="parked"\} 1\b/.test(
          await (await fetch(`${node.url}/metrics`)).text(),
        ),
      30_000,
      "the sandbox parked on the node",
    );
    expect((await deployment.containers()).some((c) => c.sandboxId === lease!.sandbox.sandboxId)).toBe(true);
  }, 120_000);
});
