/**
 * The node API against the attacks found on it, with a real edge and a real node (in this
 * process, sandbox servers as processes, Redis for the registry and leases):
 *
 * - an unsigned request's body is never read: its 401 comes while most of it is unsent, for
 *   one client and for 30 at once, and the node reads next to nothing of them;
 * - the listener caps its connections and cuts headers that never end;
 * - a sandbox leased to one workspace serves no call made for another (a recycle included);
 * - a workspace's maxFileBytes holds through an edge, declared or chunked.
 *
 * What a man in the middle can do to answers is in node-answer-tampering.test.ts.
 */
import type { Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_FILE_BYTES_HEADER } from "../../../src/contract/headers.js";
import { NodeSecrets, SIGNATURE_HEADERS } from "../../../src/roles/shared/node-signature.js";
import type { ContractClient } from "../../support/contract-client.js";
import {
  type EdgeNodeStack,
  NODE_ID,
  NODE_SECRET,
  startEdgeNodeStack,
} from "../../support/edge-node-stack.js";
import { redisAvailable } from "../../support/redis.js";
import { requireService } from "../../support/require-service.js";
import { partialHeaders, slowBody } from "../../support/slow-sender.js";

const available = await requireService("Redis", redisAvailable, { start: "docker compose up -d redis" });
const TEN_MIB = 10 * 1024 * 1024;
/** 64 KiB every 40 ms: 10 MiB would take 6.4 s. */
const SLOWLY = { totalBytes: TEN_MIB, chunkBytes: 64 * 1024, everyMs: 40 };
/** An answer before this much was sent came before the body (a loaded machine may take 1 s). */
const ANSWERED_BEFORE = 2 * 1024 * 1024;
const MAX_FILE_BYTES = 1024;
const MAX_CONNECTIONS = 48;
const HEADERS_TIMEOUT_MS = 2_000;

/** A signed call straight to the node, as an edge would make it (the test holds the secret). */
async function signedCall(
  nodeUrl: string,
  method: string,
  target: string,
  options: { workspace?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  // fetch sends an Accept of its own unless given one: signed, it must be the one sent.
  const headers: Record<string, string> = { accept: "*/*", ...options.headers };
  if (options.workspace !== undefined) headers[SIGNATURE_HEADERS.workspace] = options.workspace;
  const signed = new NodeSecrets([NODE_SECRET]).sign({
    nodeId: NODE_ID,
    method,
    target,
    headers,
    body: options.body,
  });
  const res = await fetch(`${nodeUrl}${target}`, {
    method,
    headers: { ...headers, ...signed.headers },
    body: options.body,
  });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

describe.skipIf(!available)("the node API, attacked", () => {
  let stack: EdgeNodeStack;
  let teamA: ContractClient;
  /** Bytes the node's listener read from each connection, by the time it closed. */
  const readPerConnection: number[] = [];

  beforeAll(async () => {
    stack = await startEdgeNodeStack({
      config: {
        policy: {
          allowedImages: ["sandpool/sandbox:dev"],
          defaultImage: "sandpool/sandbox:dev",
          maxFileBytes: MAX_FILE_BYTES,
        },
        node: { maxConnections: MAX_CONNECTIONS, headersTimeoutMs: HEADERS_TIMEOUT_MS },
      },
    });
    stack.node.api.server.on("connection", (socket: Socket) => {
      socket.on("close", () => readPerConnection.push(socket.bytesRead));
    });
    teamA = await stack.client("team-a");
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  }, 60_000);

  it("serves a session through the edge, every call signed both ways", async () => {
    const created = await teamA.createSession();
    expect(created.status).toBe(201);
    const id = (created.body as { session_id: string }).session_id;
    expect((await teamA.run(id, "code_execution", { code: "print(6 * 7)" })).stdout).toBe("42\n");
    const put = await teamA.putFile(id, "small", { path: "small.txt" });
    expect(put.status).toBe(201);
    expect((await teamA.getFile(id, "small.txt")).text).toBe("small");
    expect((await teamA.destroy(id)).status).toBe(204);
  }, 60_000);

  it("answers an unsigned 10 MiB POST with 401 before its body is sent, reading none of it", async () => {
    const head = [
      "POST /node/v1/leases HTTP/1.1",
      `Host: 127.0.0.1`,
      "Content-Type: application/json",
      `Content-Length: ${TEN_MIB}`,
      "",
      "",
    ].join("\r\n");
    const before = readPerConnection.length;
    const answer = await slowBody(stack.nodeUrl, head, SLOWLY);
    expect(answer.status).toBe(401);
    // Today's node read the whole body first: the answer came after all 10 MiB, 6 s in.
    expect(answer.sentWhenAnswered).toBeLessThan(ANSWERED_BEFORE);

    // 30 at once: each refused as it comes, none held open, the node reading almost nothing.
    const answers = await Promise.all(
      Array.from({ length: 30 }, () => slowBody(stack.nodeUrl, head, SLOWLY)),
    );
    for (const each of answers) {
      expect(each.status).toBe(401);
      expect(each.sentWhenAnswered).toBeLessThan(ANSWERED_BEFORE);
    }
    await waitUntil(() => readPerConnection.length >= before + 31);
    const read = readPerConnection.slice(before).reduce((sum, bytes) => sum + bytes, 0);
    // What arrived before the refusal closed each connection: nowhere near 31 x 10 MiB.
    expect(read).toBeLessThan(31 * ANSWERED_BEFORE);
  }, 60_000);

  it("refuses a request with a bad signature just as early, whatever its body", async () => {
    const signed = new NodeSecrets(["not-the-node-secret-but-32-bytes-long!!"]).sign({
      nodeId: NODE_ID,
      method: "POST",
      target: "/node/v1/leases",
      body: "x".repeat(TEN_MIB),
    });
    const head = [
      "POST /node/v1/leases HTTP/1.1",
      "Host: 127.0.0.1",
      ...Object.entries(signed.headers).map(([name, value]) => `${name}: ${value}`),
      `Content-Length: ${TEN_MIB}`,
      "",
      "",
    ].join("\r\n");
    const answer = await slowBody(stack.nodeUrl, head, SLOWLY);
    expect(answer.status).toBe(401);
    expect(answer.sentWhenAnswered).toBeLessThan(ANSWERED_BEFORE);
  }, 30_000);

  it("refuses a signed body that is not the one signed", async () => {
    const target = "/node/v1/leases";
    const headers = { "content-type": "application/json", [SIGNATURE_HEADERS.workspace]: "team-a" };
    const signed = new NodeSecrets([NODE_SECRET]).sign({
      nodeId: NODE_ID,
      method: "POST",
      target,
      headers,
      body: '{"pool":"default"}',
    });
    const res = await fetch(`${stack.nodeUrl}${target}`, {
      method: "POST",
      headers: { ...headers, ...signed.headers },
      body: '{"pool":"defaulx"}',
    });
    expect(res.status).toBe(401);
  });

  it("serves no call on a sandbox for a workspace it was not leased to", async () => {
    const created = await teamA.createSession();
    const id = (created.body as { session_id: string }).session_id;
    const lease = (await stack.store.getLease({ workspace: "team-a", sessionId: id }))!;
    const sandbox = lease.sandbox.sandboxId;
    const inner = encodeURIComponent(lease.sandbox.innerSessionId);
    const exec = (workspace?: string) =>
      signedCall(stack.nodeUrl, "POST", `/node/v1/sandboxes/${sandbox}/relay/sessions/${inner}/exec`, {
        workspace,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ tool: "bash_code_execution", input: { command: "echo x >> marker.txt" } }),
      });
    for (const other of ["team-b", undefined, "team-a%2"]) {
      const refused = await exec(other);
      expect(refused.status, String(other)).toBe(404);
      expect(refused.bytes.toString()).toContain("session.not_found");
    }
    const usage = await signedCall(stack.nodeUrl, "GET", `/node/v1/sandboxes/${sandbox}/usage`, {
      workspace: "team-b",
    });
    expect(usage.status).toBe(404);
    expect(usage.headers.get("x-sandpool-node-error")).toBe("session.not_found");
    const destroy = await signedCall(stack.nodeUrl, "POST", `/node/v1/sandboxes/${sandbox}/destroy`, {
      workspace: "team-b",
    });
    expect(destroy.status).toBe(404);
    // Nor is it scrubbed and parked for another workspace (nor for none): a recycle would
    // have ended the session's interpreter, and the run below would fail.
    for (const other of ["team-b", undefined]) {
      const recycle = await signedCall(stack.nodeUrl, "POST", `/node/v1/sandboxes/${sandbox}/recycle`, {
        workspace: other,
      });
      expect(recycle.status, String(other)).toBe(404);
      expect(recycle.headers.get("x-sandpool-node-error")).toBe("session.not_found");
    }
    // None of it reached the sandbox: no marker was written, and the session still serves.
    const listed = await teamA.run(id, "bash_code_execution", {
      command: "cat marker.txt 2>/dev/null | wc -l",
    });
    expect(listed.stdout.trim()).toBe("0");
    // The workspace it was leased to is served (the control).
    expect((await exec("team-a")).status).toBe(200);
    expect((await teamA.run(id, "bash_code_execution", { command: "cat marker.txt" })).stdout).toBe("x\n");
    expect((await teamA.destroy(id)).status).toBe(204);
  }, 60_000);

  it("holds a workspace's maxFileBytes through the edge: 413, declared or chunked", async () => {
    const created = await teamA.createSession();
    const id = (created.body as { session_id: string }).session_id;
    const declared = await teamA.request("POST", `/sessions/${id}/files`, {
      body: form("ten-k.bin", Buffer.alloc(10 * 1024, 0x62)),
    });
    expect(declared.status).toBe(413);
    const chunked = await chunkedUpload(stack.edge.url, await stack.token("team-a"), id, 5 * 1024 * 1024);
    expect(chunked.status).toBe(413);
    expect(chunked.text).toContain("file.too_large");
    // Within the cap it is stored (the control).
    const fits = await teamA.putFile(id, Buffer.alloc(MAX_FILE_BYTES, 0x63), { path: "fits.bin" });
    expect(fits.status).toBe(201);
    const listed = await teamA.run(id, "bash_code_execution", { command: "ls" });
    expect(listed.stdout.split("\n").filter(Boolean)).toEqual(["fits.bin"]);
    expect((await teamA.destroy(id)).status).toBe(204);
  }, 60_000);

  it("holds the workspace's cap on the node itself, whatever the sandbox's own", async () => {
    const created = await teamA.createSession();
    const id = (created.body as { session_id: string }).session_id;
    const lease = (await stack.store.getLease({ workspace: "team-a", sessionId: id }))!;
    const target = `/node/v1/sandboxes/${lease.sandbox.sandboxId}/relay/sessions/${encodeURIComponent(lease.sandbox.innerSessionId)}/files`;
    // A declared length past the cap and its framing is refused before the sandbox is asked.
    const headers = {
      accept: "*/*",
      "content-type": "multipart/form-data; boundary=x",
      [MAX_FILE_BYTES_HEADER]: "1024",
      [SIGNATURE_HEADERS.length]: String(1024 + 64 * 1024 + 1),
      [SIGNATURE_HEADERS.workspace]: "team-a",
    };
    const signed = new NodeSecrets([NODE_SECRET]).sign({
      nodeId: NODE_ID,
      method: "POST",
      target,
      headers,
      body: "frames",
    });
    const res = await fetch(`${stack.nodeUrl}${target}`, {
      method: "POST",
      headers: { ...headers, ...signed.headers },
      body: "",
    });
    expect(res.status).toBe(413);
    expect(res.headers.get("x-sandpool-node-error")).toBe("file.too_large");
    expect((await teamA.destroy(id)).status).toBe(204);
  }, 30_000);

  it("caps its connections, and cuts headers that never end", async () => {
    const held = await Promise.all(
      Array.from({ length: MAX_CONNECTIONS + 8 }, () => partialHeaders(stack.nodeUrl)),
    );
    // Past the cap, connections are closed as they come, answered nothing.
    const firstClosed = await Promise.race(
      held.map((connection) => connection.closed.then((closed) => closed.afterMs)),
    );
    expect(firstClosed).toBeLessThan(HEADERS_TIMEOUT_MS / 2);
    await expect(fetch(`${stack.nodeUrl}/healthz`)).rejects.toThrow();
    // The others' headers never end: each is cut near the headers' deadline, then all is served again.
    const all = await Promise.all(held.map((connection) => connection.closed));
    for (const closed of all) expect(closed.afterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 3_000);
    expect((await fetch(`${stack.nodeUrl}/healthz`)).status).toBe(200);
    for (const connection of held) connection.socket.destroy();
  }, 30_000);
});

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function form(name: string, bytes: Buffer): FormData {
  const data = new FormData();
  data.set("file", new Blob([bytes]), name);
  return data;
}

/** A PutFile whose body is chunked (no Content-Length): the edge cannot check its size first. */
async function chunkedUpload(
  baseUrl: string,
  token: string,
  sessionId: string,
  bytes: number,
): Promise<{ status: number; text: string }> {
  const boundary = "chunked-upload-boundary";
  const opening = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const closing = Buffer.from(`\r\n--${boundary}--\r\n`);
  const piece = Buffer.alloc(64 * 1024, 0x64);
  let left = bytes;
  let opened = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!opened) {
        opened = true;
        controller.enqueue(opening);
        return;
      }
      if (left > 0) {
        const size = Math.min(left, piece.length);
        left -= size;
        controller.enqueue(piece.subarray(0, size));
        return;
      }
      controller.enqueue(closing);
      controller.close();
    },
  });
  try {
    const res = await fetch(`${baseUrl}/sessions/${encodeURIComponent(sessionId)}/files`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
      },
      body,
      duplex: "half",
    } as RequestInit);
    return { status: res.status, text: await res.text() };
  } catch (error) {
    return { status: 0, text: String(error) };
  }
}
