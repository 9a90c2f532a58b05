/**
 * Streamed Execute on the sandbox server: with `Accept: text/event-stream` the output comes
 * as events while the call runs, then one result event equal to the plain answer; the
 * deltas obey the per-stream cap and end with the same marker; without the header the
 * answer is plain JSON, and errors before the stream starts keep their status.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { comparable, streamExec, streamedText } from "../../support/exec-event-stream.js";
import { newSession, startTestSandbox, type TestSandbox } from "../../support/sandbox-server.js";

const MARKER = /\n\[output truncated: \d+ more bytes were not kept\]\n$/;

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox({ maxOutputBytes: 64 * 1024 });
});
afterAll(() => sandbox.close());

/** One write per line: an unbuffered print() writes its text and its newline apart. */
const SLOW_PRINT =
  "import sys, time\nsys.stdout.write('first\\n')\ntime.sleep(1)\nsys.stdout.write('second\\n')\nprint('err', file=sys.stderr)";

describe("streamed Execute", () => {
  it("sends a delta before the call ends, then the result event equal to the plain answer", async () => {
    const id = await newSession(sandbox.client);
    const streamed = await streamExec(sandbox.server.url, id, {
      tool: "code_execution",
      input: { code: SLOW_PRINT },
    });
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const first = streamed.events[0]!;
    expect(first).toMatchObject({ event: "stdout", data: JSON.stringify({ text: "first\n" }) });
    expect(streamed.endedAtMs - first.atMs).toBeGreaterThan(700);
    expect(streamed.events.at(-1)!.event).toBe("result");
    expect(streamed.events.filter((e) => e.event === "result")).toHaveLength(1);
    expect(streamedText(streamed.events, "stdout")).toBe("first\nsecond\n");
    expect(streamedText(streamed.events, "stderr")).toBe("err\n");

    const plain = await sandbox.client.exec(id, { tool: "code_execution", input: { code: SLOW_PRINT } });
    expect(plain.headers.get("content-type")).toMatch(/^application\/json/);
    expect(comparable(JSON.parse(streamed.events.at(-1)!.data))).toEqual(comparable(plain.body));
  });

  it("streams bash output, and the result lists the files it wrote", async () => {
    const id = await newSession(sandbox.client);
    const streamed = await streamExec(sandbox.server.url, id, {
      tool: "bash_code_execution",
      input: { command: "echo one; sleep 1; echo two > x.txt; echo three >&2" },
    });
    expect(streamed.events[0]).toMatchObject({ event: "stdout", data: JSON.stringify({ text: "one\n" }) });
    expect(streamed.endedAtMs - streamed.events[0]!.atMs).toBeGreaterThan(700);
    const result = JSON.parse(streamed.events.at(-1)!.data);
    expect(result.result_block.content).toMatchObject({
      stdout: "one\n",
      stderr: "three\n",
      return_code: 0,
      content: [{ type: "code_execution_output", file_id: "x.txt", filename: "x.txt" }],
    });
  });

  it("answers the editor with its result event alone", async () => {
    const id = await newSession(sandbox.client);
    const streamed = await streamExec(sandbox.server.url, id, {
      tool: "text_editor_code_execution",
      input: { command: "create", path: "a.txt", file_text: "hi\n" },
    });
    expect(streamed.events.map((e) => e.event)).toEqual(["result"]);
  });

  it("caps the deltas like the answer, with the same marker, and keeps a character whole across chunks", async () => {
    const id = await newSession(sandbox.client);
    const code =
      "import sys\nfor _ in range(2000):\n    sys.stdout.write('é' * 333 + 'x')\n    sys.stdout.flush()";
    const streamed = await streamExec(sandbox.server.url, id, { tool: "code_execution", input: { code } });
    const deltas = streamedText(streamed.events, "stdout");
    const result = JSON.parse(streamed.events.at(-1)!.data).result_block.content.stdout as string;
    expect(deltas).toMatch(MARKER);
    expect(deltas).toBe(result);
    expect(deltas).not.toContain("\uFFFD");
    expect(Buffer.byteLength(deltas.replace(MARKER, ""))).toBeLessThanOrEqual(64 * 1024);
    const wire = streamed.events.reduce((sum, e) => sum + e.data.length, 0);
    expect(wire).toBeLessThan(3 * 64 * 1024 * 2);
  });

  it("says a timeout in the deltas too", async () => {
    const id = await newSession(sandbox.client);
    const streamed = await streamExec(sandbox.server.url, id, {
      tool: "code_execution",
      input: { code: "import time\nprint('start', flush=True)\ntime.sleep(30)" },
      timeout_seconds: 1,
    });
    const result = JSON.parse(streamed.events.at(-1)!.data).result_block.content;
    expect(result.return_code).toBe(124);
    expect(streamedText(streamed.events, "stderr")).toBe(result.stderr);
    expect(streamedText(streamed.events, "stderr")).toContain("timed out");
  });

  it("answers errors before the stream as JSON with their status", async () => {
    const missing = await streamExec(sandbox.server.url, "no-such-session", {
      tool: "code_execution",
      input: { code: "1" },
    });
    expect(missing.status).toBe(404);
    expect(missing.events).toEqual([]);
    expect(JSON.parse(missing.text).detail.code).toBe("session.not_found");
    const id = await newSession(sandbox.client);
    const malformed = await streamExec(sandbox.server.url, id, { tool: "code_execution", input: {} });
    expect(malformed.status).toBe(422);
    expect(JSON.parse(malformed.text).detail.code).toBeDefined();
  });
});
