/**
 * How sessions end (docs/architecture.md, "Session lifecycle"): idle timeout and maximum
 * lifetime reap, a call in flight keeps a session from idling out, every call counts as
 * activity, a sandbox that dies ends its session, and DestroySession destroys the sandbox
 * process.
 */
import { randomUUID } from "node:crypto";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Answer, ContractClient } from "../../support/contract-client.js";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";
import { processExists } from "../../support/sandbox-server.js";
import { waitFor } from "../../support/wait-for.js";

let harness: TestGateway;
beforeAll(async () => {
  harness = await startTestGateway({
    pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdle: 1, maxTotal: 8 }],
  });
});
afterAll(() => harness.close());

const freshWorkspace = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function sessionIdOf(answer: Answer): string {
  expect(answer.status, answer.text).toBe(201);
  return (answer.body as { session_id: string }).session_id;
}

function codeOf(answer: Answer): string | undefined {
  return (answer.body as { detail?: { code?: string } }).detail?.code;
}

async function leaseFacts(sessionId: string): Promise<{ pid: number; createdAt: number }> {
  const lease = (await harness.store.listLeases()).find((l) => l.sessionId === sessionId);
  if (!lease) throw new Error(`no lease for ${sessionId}`);
  return { pid: Number(lease.sandbox.runtimeId), createdAt: lease.createdAt };
}

const pidOf = async (sessionId: string) => (await leaseFacts(sessionId)).pid;

const hasLease = async (sessionId: string) =>
  (await harness.store.listLeases()).some((l) => l.sessionId === sessionId);

async function lastActivity(client: ContractClient, id: string): Promise<number> {
  const handle = await client.getSession(id);
  expect(handle.status, handle.text).toBe(200);
  return (handle.body as { last_activity_at: number }).last_activity_at;
}

async function endedCount(reason: string): Promise<number> {
  const metric = await harness.gateway.services.metrics.sessionsEnded.get();
  return metric.values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

/** Waits for a ready sandbox, so the next lease is warm: a slow cold start eats into short timeouts. */
const warmPool = () =>
  waitFor(async () => (await harness.store.listIdle("default")).length >= 1, 15_000, "an idle sandbox");

const quickExec = { tool: "code_execution", input: { code: "print(1)" } };

describe("reaping", () => {
  it("ends a session past its idle timeout and destroys its sandbox", async () => {
    const client = await harness.client(freshWorkspace("idle"));
    await warmPool();
    const id = sessionIdOf(await client.createSession({ idle_timeout_seconds: 1 }));
    const { createdAt, pid } = await leaseFacts(id);

    await waitFor(async () => !(await hasLease(id)), 10_000, "the idle reap");
    const endedAfter = Date.now() - createdAt;
    expect(endedAfter).toBeGreaterThanOrEqual(1_000); // not before its time
    expect(endedAfter).toBeLessThan(3_000); // reaped every 100 ms; slack for a loaded machine
    expect((await client.getSession(id)).status).toBe(404);
    await waitFor(() => !processExists(pid), 5_000, "the sandbox process to exit");
  });

  it("ends a session at its maximum lifetime even while it is busy", async () => {
    const client = await harness.client(freshWorkspace("lifetime"));
    await warmPool();
    const id = sessionIdOf(
      await client.createSession({ max_lifetime_seconds: 3, idle_timeout_seconds: 600 }),
    );
    const { createdAt, pid } = await leaseFacts(id);

    let last: Answer | undefined;
    while (Date.now() - createdAt < 15_000) {
      last = await client.exec(id, quickExec);
      if (last.status !== 200) break;
      await sleep(100);
    }
    const endedAfter = Date.now() - createdAt;
    // Reaped between two calls (404) or during one (its sandbox destroyed under it: 502).
    expect([404, 502], last?.text).toContain(last?.status);
    expect(endedAfter).toBeGreaterThanOrEqual(3_000);
    expect(endedAfter).toBeLessThan(6_000); // the loop itself would go on to 15 s
    expect((await client.getSession(id)).status).toBe(404);
    await waitFor(() => !processExists(pid), 5_000, "the sandbox process to exit");
  });

  it("does not idle out a session while a call runs", async () => {
    const client = await harness.client(freshWorkspace("busy"));
    const id = sessionIdOf(await client.createSession({ idle_timeout_seconds: 2 }));
    const long = await client.exec(id, {
      tool: "code_execution",
      input: { code: "import time\ntime.sleep(5)\nprint('done')" },
      timeout_seconds: 10,
    });
    expect(long.status, long.text).toBe(200);
    const content = (long.body as { result_block: { content: { stdout: string; return_code: number } } })
      .result_block.content;
    expect(content).toMatchObject({ stdout: "done\n", return_code: 0 });
    // The call counted as activity: the session lives on, and idles out afterwards.
    expect((await client.getSession(id)).status).toBe(200);
    await waitFor(async () => !(await hasLease(id)), 5_000, "the idle reap after the call");
  });
  it("does not idle out a session while a second, queued call runs", async () => {
    // The sandbox runs a session's calls one at a time: the second waits for the first. When
    // the first ends, the session must still count as busy for the second.
    const client = await harness.client(freshWorkspace("busy-two"));
    const id = sessionIdOf(await client.createSession({ idle_timeout_seconds: 2 }));
    const call = (label: string) =>
      client.exec(id, {
        tool: "code_execution",
        input: { code: `import time\ntime.sleep(3)\nprint('${label}')` },
        timeout_seconds: 10,
      });
    const first = call("first");
    await sleep(200);
    const second = call("second");
    const answers = await Promise.all([first, second]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    const outputs = answers.map((a) => {
      const { stdout, return_code } = (a.body as { result_block: { content: Record<string, unknown> } })
        .result_block.content;
      return { stdout, return_code };
    });
    // Reaped under the second call, the sandbox kills its interpreter: return_code 137.
    expect(outputs).toEqual([
      { stdout: "first\n", return_code: 0 },
      { stdout: "second\n", return_code: 0 },
    ]);
    expect((await client.getSession(id)).status).toBe(200);
    await client.destroy(id);
  });
});

describe("a slow file transfer", () => {
  // A transfer is a call in flight too: like a long Execute, it must keep the session from
  // idling out while it runs (records.ts: busyUntil), or the reaper destroys the sandbox
  // under it.
  it("is not cut off by the idle timeout during an upload", async () => {
    const workspace = freshWorkspace("slow-up");
    const client = await harness.client(workspace);
    const token = await harness.token(workspace);
    const id = sessionIdOf(await client.createSession({ idle_timeout_seconds: 2 }));
    const boundary = "sandpool-slow-upload";
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name="path"\r\n\r\nslow.txt\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.txt"\r\n` +
      "Content-Type: application/octet-stream\r\n\r\n";
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const url = new URL(`${harness.url}/sessions/${id}/files`);
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: {
            authorization: `Bearer ${token}`,
            "content-type": `multipart/form-data; boundary=${boundary}`,
          },
        },
        (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            body += chunk;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on("error", reject);
      req.write(head);
      let sent = 0;
      // 12 chunks of 10 bytes, one every 500 ms: three times the idle timeout.
      const timer = setInterval(() => {
        req.write("x".repeat(10));
        if (++sent === 12) {
          clearInterval(timer);
          req.end(`\r\n--${boundary}--\r\n`);
        }
      }, 500);
    });
    expect(answer.status, answer.body).toBe(201);
    expect(JSON.parse(answer.body)).toEqual({ path: "slow.txt", size_bytes: 120 });
    expect((await client.getSession(id)).status).toBe(200);
    await client.destroy(id);
  });

  it("is not cut off by the idle timeout during a download", async () => {
    const workspace = freshWorkspace("slow-down");
    const client = await harness.client(workspace);
    const token = await harness.token(workspace);
    const id = sessionIdOf(await client.createSession({ idle_timeout_seconds: 2 }));
    const size = 32 * 1024 * 1024;
    await client.run(id, "code_execution", { code: `open('big.bin', 'wb').write(b'x' * ${size})` });
    const received = await new Promise<{ status: number; bytes: number; error?: string }>((resolve) => {
      const url = new URL(`${harness.url}/sessions/${id}/files?path=big.bin`);
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: `${url.pathname}${url.search}`,
          headers: { authorization: `Bearer ${token}` },
        },
        (res) => {
          let bytes = 0;
          // A slow client: reads nothing for 6 s (three idle timeouts), then everything.
          res.pause();
          setTimeout(() => res.resume(), 6_000);
          res.on("data", (chunk: Buffer) => {
            bytes += chunk.length;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, bytes }));
          res.on("aborted", () => resolve({ status: res.statusCode ?? 0, bytes, error: "aborted" }));
          res.on("error", (error) => resolve({ status: res.statusCode ?? 0, bytes, error: String(error) }));
        },
      );
      req.on("error", (error) => resolve({ status: 0, bytes: 0, error: String(error) }));
      req.end();
    });
    expect(received).toEqual({ status: 200, bytes: size });
    expect((await client.getSession(id)).status).toBe(200);
    await client.destroy(id);
  });
});

describe("activity", () => {
  it("is recorded by every call on the session", async () => {
    const client = await harness.client(freshWorkspace("touch"));
    const id = sessionIdOf(await client.createSession());
    let previous = await lastActivity(client, id);

    const calls: [string, () => Promise<Answer>][] = [
      ["exec", () => client.exec(id, quickExec)],
      ["files/list", () => client.listFiles(id)],
      ["put", () => client.putFile(id, "hello", { path: "hello.txt" })],
      ["files get", () => client.getFile(id, "hello.txt")],
    ];
    for (const [name, call] of calls) {
      await sleep(60);
      const answer = await call();
      expect(answer.status, `${name}: ${answer.text}`).toBeLessThan(300);
      const now = await lastActivity(client, id);
      expect(now, `${name} touched last_activity_at`).toBeGreaterThan(previous);
      previous = now;
    }
    await client.destroy(id);
  });
});

describe("a sandbox that dies", () => {
  it("ends its session: 502 sandbox.unreachable, then 404, the slot released", async () => {
    const workspace = freshWorkspace("dead");
    const client = await harness.client(workspace);
    const id = sessionIdOf(await client.createSession());
    expect(await harness.store.countSlots(workspace, Date.now())).toBe(1);
    const failedBefore = await endedCount("sandbox_failed");
    const pid = await pidOf(id);
    process.kill(pid, "SIGKILL");
    await waitFor(() => !processExists(pid), 5_000, "the sandbox process to die");

    const call = await client.exec(id, quickExec);
    expect(call.status, call.text).toBe(502);
    expect(codeOf(call)).toBe("sandbox.unreachable");
    expect(await hasLease(id)).toBe(false);
    expect(await harness.store.countSlots(workspace, Date.now())).toBe(0);
    expect(await endedCount("sandbox_failed")).toBe(failedBefore + 1);
    expect((await client.getSession(id)).status).toBe(404);
    expect((await client.listFiles(id)).status).toBe(404);
  });

  it("ends its session when it dies during a call", async () => {
    const workspace = freshWorkspace("dead-mid-call");
    const client = await harness.client(workspace);
    const id = sessionIdOf(await client.createSession());
    const pid = await pidOf(id);
    const running = client.exec(id, {
      tool: "code_execution",
      input: { code: "import time\ntime.sleep(5)" },
      timeout_seconds: 10,
    });
    await sleep(700);
    process.kill(pid, "SIGKILL");
    const call = await running;
    expect(call.status, call.text).toBe(502);
    expect(codeOf(call)).toBe("sandbox.unreachable");
    expect(await harness.store.countSlots(workspace, Date.now())).toBe(0);
    expect((await client.exec(id, quickExec)).status).toBe(404);
  });
});

describe("DestroySession", () => {
  it("destroys the sandbox process", async () => {
    const workspace = freshWorkspace("destroy");
    const client = await harness.client(workspace);
    const id = sessionIdOf(await client.createSession());
    const pid = await pidOf(id);
    expect(processExists(pid)).toBe(true);
    expect((await client.destroy(id)).status).toBe(204);
    expect(await hasLease(id)).toBe(false);
    expect(await harness.store.countSlots(workspace, Date.now())).toBe(0);
    await waitFor(() => !processExists(pid), 5_000, "the sandbox process to exit");
    // Its place in the pool is freed too.
    await waitFor(
      async () => {
        const members = await harness.store.listMembers("default", Date.now());
        const leased = (await harness.store.listLeases()).map((l) => l.sandbox.sandboxId);
        const idle = (await harness.store.listIdle("default")).map((r) => r.sandboxId);
        return members.every((m) => leased.includes(m) || idle.includes(m));
      },
      5_000,
      "the pool membership to be released",
    );
  });
});
