import { Readable } from "node:stream";
import pino from "pino";
import type { Dispatcher } from "undici";
import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { SandboxForwarder } from "../../../src/forward/sandbox-forwarder.js";
import type { Lease, LeaseKey } from "../../../src/store/coordination/records.js";

const lease: Lease = {
  sessionId: "s1",
  workspace: "team-a",
  pool: "p",
  image: "img",
  sandbox: {
    sandboxId: "sb1",
    pool: "p",
    endpoint: "http://sandbox.invalid",
    runtimeId: "r1",
    innerSessionId: "inner/1",
    createdAt: 0,
  },
  createdAt: 0,
  lastActivityAt: 0,
  idleTimeoutSeconds: 60,
  maxLifetimeSeconds: 600,
};

function answer(status: number, body: string, headers: Record<string, string> = {}): Dispatcher.ResponseData {
  return {
    statusCode: status,
    headers: { "content-type": "application/json", ...headers },
    body: Readable.from([Buffer.from(body)]),
  } as unknown as Dispatcher.ResponseData;
}

/** A forwarder over a fake client, recording the paths sent and the sessions failed. */
function forwarderWith(send: () => Promise<Dispatcher.ResponseData>, ended = true) {
  const paths: string[] = [];
  const failed: LeaseKey[] = [];
  const forwarder = new SandboxForwarder({
    client: {
      send: async (_endpoint, request) => {
        paths.push(request.path);
        return send();
      },
    },
    limits: { sandboxRequestTimeoutMs: 1_000, maxSandboxErrorBytes: 64, maxBufferedAnswerBytes: 1_024 },
    log: pino({ level: "silent" }),
    onSessionFailed: async (key) => {
      failed.push(key);
      return ended;
    },
  });
  return { forwarder, paths, failed };
}

describe("SandboxForwarder", () => {
  it("sends to the lease's inner session and passes a successful answer on, failing nothing", async () => {
    const { forwarder, paths, failed } = forwarderWith(async () => answer(200, '{"ok":true}'));
    const got = await forwarder.forward(lease, {
      method: "GET",
      subPath: "/files",
      query: "path=a",
      timeoutMs: 1_000,
      buffer: true,
    });
    expect(paths).toEqual(["/sessions/inner%2F1/files?path=a"]);
    expect(got.status).toBe(200);
    expect(Buffer.from(got.body as Buffer).toString()).toBe('{"ok":true}');
    expect(failed).toEqual([]);
    expect(forwarder.budget.reservedBytes).toBe(0);
  });

  it("fails the session through its callback when the sandbox cannot be reached", async () => {
    const { forwarder, failed } = forwarderWith(async () => {
      throw new SandpoolError("sandbox.unreachable", "gone");
    });
    await expect(
      forwarder.forward(lease, { method: "GET", subPath: "/files", timeoutMs: 1_000 }),
    ).rejects.toMatchObject({
      code: "sandbox.unreachable",
    });
    expect(failed).toEqual([{ workspace: "team-a", sessionId: "s1" }]);
  });

  it("answers the 404 of an unknown session when someone else had ended it already", async () => {
    const { forwarder } = forwarderWith(async () => {
      throw new SandpoolError("sandbox.timeout", "slow");
    }, false);
    await expect(
      forwarder.forward(lease, { method: "GET", subPath: "/files", timeoutMs: 1_000 }),
    ).rejects.toMatchObject({
      code: "session.not_found",
    });
  });

  it("fails the session when the sandbox no longer knows the inner session", async () => {
    const body = JSON.stringify({ detail: { code: "session.not_found", message: "no" } });
    const { forwarder, failed } = forwarderWith(async () => answer(404, body));
    await expect(
      forwarder.forward(lease, { method: "GET", subPath: "/files", timeoutMs: 1_000, buffer: true }),
    ).rejects.toMatchObject({ code: "session.not_found" });
    expect(failed).toHaveLength(1);
  });

  it("turns a plain JSON answer to a streamed Execute into one result event", async () => {
    const { forwarder } = forwarderWith(async () => answer(200, '{"return_code":0}'));
    const stream = await forwarder.forwardExecStream(lease, {
      body: "{}",
      deadlineMs: 1_000,
      log: pino({ level: "silent" }),
    });
    expect(stream.kind).toBe("events");
    if (stream.kind !== "events") return;
    expect(stream.body).toBe('event: result\ndata: {"return_code":0}\n\n');
    await stream.done;
  });
});
