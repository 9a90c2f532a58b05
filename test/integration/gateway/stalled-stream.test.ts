/**
 * A streamed Execute whose client stops reading must not keep the gateway's shared answer
 * budget: the relay reserves the result's bytes when the result arrives and, paused while the
 * client does not read, would hold them forever, making every workspace's buffered Execute
 * wait. Here the budget is one result's worth, so a stall that held it would block the other
 * workspace's call until the test gave up on it.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Lease } from "../../../src/store/coordination/records.js";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";

const MIB = 1024 * 1024;
/** One result's reservation (the answer cap) takes it all; output events may use up to it. */
const BUDGET = 8 * MIB;
/** timeout_seconds 1 plus this buffer: the stalled call's deadline. */
const DEADLINE_BUFFER_MS = 4_000;
const STALLED_DEADLINE_MS = 1_000 + DEADLINE_BUFFER_MS;
/** Far longer than the stalled deadline, so it is the relay's end that frees the budget. */
const READ_TIMEOUT_MS = 30_000;
const DELTA = `event: stdout\ndata: ${JSON.stringify({ text: "x".repeat(256 * 1024) })}\n\n`;
const MAX_DELTAS = Math.floor((BUDGET - MIB) / DELTA.length);
const RESULT = JSON.stringify({
  tool_use_id: "t",
  result_block: { content: { stdout: "", return_code: 0 } },
});

let harness: TestGateway;
let streamingSandbox: Server;
let stalledClient: Socket | undefined;
/** The gateway's side of each client connection, by the client's port. */
const gatewaySide = new Map<number, Socket>();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The gateway cannot write to the stalled client: its socket buffers are full. */
function gatewayBlocked(): boolean {
  const socket = stalledClient && gatewaySide.get(stalledClient.localPort ?? 0);
  return (socket?.writableLength ?? 0) > 0;
}

beforeAll(async () => {
  harness = await startTestGateway({
    limits: {
      maxSandboxAnswerBytes: BUDGET,
      maxBufferedAnswerBytes: BUDGET,
      execDeadlineBufferMs: DEADLINE_BUFFER_MS,
      sandboxRequestTimeoutMs: READ_TIMEOUT_MS,
    },
  });
  harness.gateway.server.on("connection", (socket: Socket) => {
    if (socket.remotePort !== undefined) gatewaySide.set(socket.remotePort, socket);
  });
  // A sound sandbox that prints a lot, then answers: it answers just after the gateway's
  // writes to the client stopped going through, so the relay reads the result (and reserves
  // its bytes) while the client reads nothing.
  streamingSandbox = createServer((request, response) => {
    request.resume();
    response.writeHead(200, { "content-type": "text/event-stream" });
    void (async () => {
      for (let i = 0; i < MAX_DELTAS && !gatewayBlocked(); i++) {
        response.write(DELTA);
        await sleep(30);
      }
      response.end(`event: result\ndata: ${RESULT}\n\n`);
    })();
  });
  streamingSandbox.listen(0, "127.0.0.1");
  await once(streamingSandbox, "listening");
});
afterAll(async () => {
  stalledClient?.destroy();
  streamingSandbox?.closeAllConnections();
  await new Promise((resolve) => streamingSandbox?.close(resolve));
  await harness?.close();
});

/** A session of `workspace` that the gateway believes the streaming sandbox serves. */
async function streamingSession(workspace: string): Promise<string> {
  const created = await (await harness.client(workspace)).createSession();
  const template = (await harness.store.getLease({
    workspace,
    sessionId: (created.body as { session_id: string }).session_id,
  })) as Lease;
  const sessionId = `stalled${"0".repeat(17)}abcd`;
  const { port } = streamingSandbox.address() as AddressInfo;
  await harness.store.putLease({
    ...template,
    sessionId,
    lastActivityAt: Date.now(),
    sandbox: {
      ...template.sandbox,
      sandboxId: "streaming",
      endpoint: `http://127.0.0.1:${port}`,
      innerSessionId: "s",
    },
  });
  return sessionId;
}

/** Sends a streamed Execute over a raw socket and never reads the answer. */
async function stallOnStreamedExec(workspace: string, sessionId: string): Promise<Socket> {
  const url = new URL(harness.url);
  const body = JSON.stringify({ tool: "bash_code_execution", input: { command: "yes" }, timeout_seconds: 1 });
  const socket = connect(Number(url.port), url.hostname);
  await once(socket, "connect");
  socket.pause();
  socket.write(
    [
      `POST /sessions/${sessionId}/exec HTTP/1.1`,
      `Host: ${url.host}`,
      `Authorization: Bearer ${await harness.token(workspace)}`,
      "Content-Type: application/json",
      "Accept: text/event-stream",
      `Content-Length: ${Buffer.byteLength(body)}`,
      "",
      body,
    ].join("\r\n"),
  );
  return socket;
}

async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return condition();
}

describe("a streamed Execute whose client stops reading", () => {
  it("gives the answer budget back by its deadline: another workspace's buffered Execute goes through", async () => {
    const other = await harness.client("team-other");
    const otherSession = (await other.createSession()).body as { session_id: string };
    const budget = harness.gateway.services.forwarder.budget;

    const started = Date.now();
    stalledClient = await stallOnStreamedExec("team-stalled", await streamingSession("team-stalled"));
    // The relay has reached the result and holds its reservation: the whole budget.
    expect(await until(() => budget.reservedBytes === BUDGET, STALLED_DEADLINE_MS - 200)).toBe(true);

    const answer = await fetch(`${harness.url}/sessions/${otherSession.session_id}/exec`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await harness.token("team-other")}`,
        "content-type": "application/json",
      },
      // An answer too large to come in one read with its headers, so it must wait for budget.
      body: JSON.stringify({
        tool: "bash_code_execution",
        input: { command: "head -c 262144 /dev/zero | tr '\\0' x; echo through" },
      }),
      signal: AbortSignal.timeout(STALLED_DEADLINE_MS + 8_000),
    });
    expect(answer.status).toBe(200);
    expect(JSON.stringify(await answer.json())).toContain("through");
    expect(Date.now() - started).toBeLessThan(STALLED_DEADLINE_MS + 8_000);
    expect(budget.reservedBytes).toBe(0);
    // The stalled client's connection is closed too, instead of holding what was written to it.
    const port = stalledClient.localPort ?? 0;
    expect(await until(() => gatewaySide.get(port)?.destroyed === true, 5_000)).toBe(true);
  }, 30_000);
});
