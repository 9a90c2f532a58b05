import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { budgetDay } from "../../../src/admission/admission.js";
import { assertContractResponse } from "../../support/contract.js";
import { comparable, streamExec, streamedText } from "../../support/exec-event-stream.js";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";
import { waitFor } from "../../support/wait-for.js";

const MAX_CALLS_IN_FLIGHT = 2;
/** Below the sandbox's 1 MiB per stream: a megabyte of output is over the gateway's cap. */
const MAX_ANSWER_BYTES = 512 * 1024;

let harness: TestGateway;
beforeAll(async () => {
  harness = await startTestGateway({
    pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdle: 1, maxTotal: 12 }],
    limits: { maxCallsInFlightPerWorkspace: MAX_CALLS_IN_FLIGHT, maxSandboxAnswerBytes: MAX_ANSWER_BYTES },
  });
});
afterAll(() => harness.close());

const freshWorkspace = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

async function openSession(workspace: string): Promise<{ id: string; token: string }> {
  const client = await harness.client(workspace);
  const created = await client.createSession();
  expect(created.status, created.text).toBe(201);
  return { id: (created.body as { session_id: string }).session_id, token: await harness.token(workspace) };
}

/** One write per line: an unbuffered print() writes its text and its newline apart. */
const SLOW_PRINT =
  "import sys, time\nsys.stdout.write('first\\n')\ntime.sleep(1)\nsys.stdout.write('second\\n')";

describe("streamed Execute through the gateway", () => {
  it("relays a delta before the call ends, then the result event equal to the plain answer", async () => {
    const workspace = freshWorkspace("stream");
    const { id, token } = await openSession(workspace);
    const payload = { tool: "code_execution", input: { code: SLOW_PRINT } };
    const streamed = await streamExec(harness.url, id, payload, token);
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(streamed.events[0]).toMatchObject({ event: "stdout", data: JSON.stringify({ text: "first\n" }) });
    expect(streamed.endedAtMs - streamed.events[0]!.atMs).toBeGreaterThan(700);
    expect(streamed.events.map((e) => e.event)).toEqual(["stdout", "stdout", "result"]);
    expect(streamedText(streamed.events, "stdout")).toBe("first\nsecond\n");
    assertContractResponse("Execute", 200, JSON.parse(streamed.events.at(-1)!.data));

    const plain = await (await harness.client(workspace)).exec(id, payload);
    expect(plain.status).toBe(200);
    expect(comparable(JSON.parse(streamed.events.at(-1)!.data))).toEqual(comparable(plain.body));
  });

  it("lists the files the call wrote in the result event, and GetFile fetches them", async () => {
    const workspace = freshWorkspace("stream-files");
    const { id, token } = await openSession(workspace);
    const streamed = await streamExec(
      harness.url,
      id,
      { tool: "bash_code_execution", input: { command: "mkdir -p out && printf 'a,b\\n' > out/data.csv" } },
      token,
    );
    const result = JSON.parse(streamed.events.at(-1)!.data);
    expect(result.result_block.content.content).toEqual([
      { type: "code_execution_output", file_id: "out/data.csv", filename: "data.csv" },
    ]);
    const file = await (await harness.client(workspace)).getFile(id, "out/data.csv");
    expect(file.text).toBe("a,b\n");
  });

  it("charges the budget the wall time to the end of the stream", async () => {
    const workspace = freshWorkspace("stream-budget");
    const { id, token } = await openSession(workspace);
    const charged = () => harness.store.readBudget(workspace, budgetDay(Date.now()));
    expect(await charged()).toBe(0);
    await streamExec(
      harness.url,
      id,
      { tool: "bash_code_execution", input: { command: "echo go; sleep 2; echo done" } },
      token,
    );
    await waitFor(async () => (await charged()) >= 2_000, 5_000, "the streamed call to be charged");
    expect(await charged()).toBeLessThan(3_500);
  });

  it("keeps the session busy and the call in flight until the stream ends", async () => {
    const workspace = freshWorkspace("stream-held");
    const first = await openSession(workspace);
    const second = await openSession(workspace);
    const client = await harness.client(workspace);
    const lease = async (sessionId: string) =>
      (await harness.store.listLeases()).find((l) => l.sessionId === sessionId);
    const running = (seconds: number) => ({
      tool: "code_execution",
      input: { code: `import time\nprint('go', flush=True)\ntime.sleep(${seconds})` },
    });
    const payload = running(1.5);
    let checkedWhileRunning = false;
    // Both calls of the workspace are streaming (their handlers have returned): a third is refused.
    // The outer call runs long enough for the inner one to start and check on a loaded machine.
    const outer = await streamExec(harness.url, first.id, running(6), first.token, async (event) => {
      if (event.event !== "stdout") return;
      const inner = await streamExec(harness.url, second.id, payload, second.token, async (inner) => {
        if (inner.event !== "stdout") return;
        // A call begun from the lease cache is written to the store behind (within ~25 ms).
        await waitFor(
          async () => (await lease(first.id))?.activeCalls === 1,
          5_000,
          "the streaming call counted in flight on its lease",
        );
        const refused = await client.getSession(first.id);
        expect(refused.status).toBe(429);
        expect((refused.body as { detail: { code: string } }).detail.code).toBe("quota.calls_in_flight");
        checkedWhileRunning = true;
      });
      expect(inner.status, inner.text).toBe(200);
      expect(
        inner.events.map((e) => e.event),
        JSON.stringify(inner.events),
      ).toContain("stdout");
    });
    expect(outer.status, outer.text).toBe(200);
    expect(checkedWhileRunning, JSON.stringify(outer.events)).toBe(true);
    await waitFor(async () => (await lease(first.id))?.activeCalls === 0, 5_000, "the call to end");
    expect((await client.getSession(first.id)).status).toBe(200);
  });

  it("answers errors before the stream as JSON with their status", async () => {
    const workspace = freshWorkspace("stream-errors");
    const { id, token } = await openSession(workspace);
    const missing = await streamExec(
      harness.url,
      "no-such-session",
      { tool: "code_execution", input: { code: "1" } },
      token,
    );
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.text).detail.code).toBe("session.not_found");
    const unknown = await streamExec(harness.url, id, { tool: "no_such_tool", input: {} }, token);
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get("content-type")).toMatch(/^application\/json/);
  });

  it("keeps a huge output capped: the deltas stop at the gateway's cap and the result is the replacement", async () => {
    const workspace = freshWorkspace("stream-huge");
    const { id, token } = await openSession(workspace);
    const payload = {
      tool: "code_execution",
      input: {
        code: "import sys\nfor _ in range(200):\n    sys.stdout.write('x' * 50_000)\n    sys.stdout.flush()",
      },
    };
    const streamed = await streamExec(harness.url, id, payload, token);
    expect(streamed.status).toBe(200);
    const wire = streamed.events.reduce((sum, e) => sum + e.data.length + e.event.length + 16, 0);
    expect(wire).toBeLessThanOrEqual(MAX_ANSWER_BYTES + 64 * 1024);
    const result = JSON.parse(streamed.events.at(-1)!.data);
    expect(streamed.events.at(-1)!.event).toBe("result");
    expect(result.result_block.content.stderr).toContain("larger than the gateway's limit");
    // The plain call of the same code gets the same replacement, and the session lives on.
    const plain = await (await harness.client(workspace)).exec(id, payload);
    expect(comparable(plain.body)).toEqual(comparable(result));
    const after = await (await harness.client(workspace)).run(id, "code_execution", { code: "print(2)" });
    expect(after.stdout).toBe("2\n");
  });

  it("relays output under the caps whole", async () => {
    const workspace = freshWorkspace("stream-marker");
    const { id, token } = await openSession(workspace);
    const code = "import sys\nsys.stderr.write('e' * 100_000)";
    const streamed = await streamExec(harness.url, id, { tool: "code_execution", input: { code } }, token);
    const result = JSON.parse(streamed.events.at(-1)!.data).result_block.content;
    expect(streamedText(streamed.events, "stderr")).toBe(result.stderr);
    expect(result.stderr).toHaveLength(100_000);
  });
});

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe("output files through the gateway", () => {
  async function listedThenFetched(code: string, fileId: string): Promise<Buffer> {
    const workspace = freshWorkspace("files");
    const { id, token } = await openSession(workspace);
    const answer = await (await harness.client(workspace)).exec(id, {
      tool: "code_execution",
      input: { code },
    });
    expect(answer.status, answer.text).toBe(200);
    const listed = (answer.body as { result_block: { content: { content: { file_id: string }[] } } })
      .result_block.content.content;
    expect(listed.map((b) => b.file_id)).toContain(fileId);
    const res = await fetch(`${harness.url}/sessions/${id}/files?path=${encodeURIComponent(fileId)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(200);
    return Buffer.from(await res.arrayBuffer());
  }

  it("lists a binary file the code wrote, and GetFile returns its bytes", async () => {
    const bytes = await listedThenFetched(
      "import os\nos.makedirs('charts', exist_ok=True)\nopen('charts/c.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + bytes(range(256)))",
      "charts/c.png",
    );
    expect(bytes.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(bytes).toHaveLength(8 + 256);
  });
});
