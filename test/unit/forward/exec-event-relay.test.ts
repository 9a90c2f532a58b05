/**
 * The gateway's relay of a sandbox's streamed Execute, fed by hand-made streams (sound and
 * hostile): deltas and the result are written anew, no line end of the sandbox's can add an
 * event, every bound holds, and a
 * sandbox that breaks the format, hangs or drops the session ends the session.
 */
import { PassThrough, Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { type RelayOptions, relayExecEvents } from "../../../src/forward/exec-event-relay.js";

const RESULT = JSON.stringify({ tool_use_id: "t", result_block: { content: { stdout: "hi\n" } } });

function harness(overrides: Partial<RelayOptions> = {}) {
  const failures: SandpoolError[] = [];
  let reserved = 0;
  let released = 0;
  const options: RelayOptions = {
    maxDeltaBytes: 1024,
    maxResultBytes: 1024,
    maxErrorBytes: 256,
    deadlineMs: 2_000,
    reserve: async (bytes) => {
      reserved += bytes;
      return () => {
        released += bytes;
      };
    },
    oversizedResult: () => '{"replaced":true}',
    onSandboxFailure: async (error) => {
      failures.push(error);
    },
    ...overrides,
  };
  return { options, failures, budget: () => ({ reserved, released }) };
}

async function readAll(body: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(body).text();
}

function events(text: string): { event: string; data: string }[] {
  return text
    .split("\n\n")
    .filter((block) => block.length > 0)
    .map((block) => {
      const [event, data] = block.split("\n");
      return { event: event!.slice("event: ".length), data: data!.slice("data: ".length) };
    });
}

describe("relayExecEvents", () => {
  it("passes deltas (split anywhere) and the result through, and releases the result's reservation", async () => {
    const h = harness();
    const wire = `event: stdout\ndata: {"text":"a"}\n\nevent: stderr\ndata: {"text":"b","extra":1}\n\nevent: result\ndata: ${RESULT}\n\n`;
    const chunks = [...wire].map((ch) => Buffer.from(ch)); // one byte at a time
    const relay = relayExecEvents(Readable.from(chunks), h.options);
    expect(events(await readAll(relay.body))).toEqual([
      { event: "stdout", data: '{"text":"a"}' },
      { event: "stderr", data: '{"text":"b"}' },
      { event: "result", data: RESULT },
    ]);
    await relay.done;
    expect(h.failures).toEqual([]);
    expect(h.budget()).toEqual({ reserved: 1024, released: 1024 });
  });

  it("calls onResult once the result is read and before its event reaches the client (its usage is journaled there)", async () => {
    const seen: string[] = [];
    const h = harness({ onResult: () => seen.push("onResult") });
    const wire = `event: stdout\ndata: {"text":"a"}\n\nevent: result\ndata: ${RESULT}\n\n`;
    const relay = relayExecEvents(Readable.from([Buffer.from(wire)]), h.options);
    const reader = relay.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      const text = decoder.decode(next.value);
      if (text.includes("event: result")) seen.push("result event");
      if (text.includes("event: stdout")) seen.push("stdout event");
    }
    expect(seen).toEqual(["stdout event", "onResult", "result event"]);
  });

  it("sends a stderr note first and puts it before the result's stderr (the interpreter restarted)", async () => {
    const h = harness({ stderrNote: "restarted\n" });
    const result = JSON.stringify({ result_block: { content: { stdout: "1\n", stderr: "warn\n" } } });
    const wire = `event: stdout\ndata: {"text":"1\\n"}\n\nevent: result\ndata: ${result}\n\n`;
    const relay = relayExecEvents(Readable.from([Buffer.from(wire)]), h.options);
    const got = events(await readAll(relay.body));
    expect(got[0]).toEqual({ event: "stderr", data: '{"text":"restarted\\n"}' });
    expect(got[1]?.event).toBe("stdout");
    expect(JSON.parse(got[2]!.data).result_block.content.stderr).toBe("restarted\nwarn\n");
  });

  it("replaces the result when the deltas exceed their bound, without failing the session", async () => {
    const h = harness();
    const delta = `event: stdout\ndata: ${JSON.stringify({ text: "x".repeat(300) })}\n\n`;
    const relay = relayExecEvents(Readable.from([Buffer.from(delta.repeat(10))]), h.options);
    const got = events(await readAll(relay.body));
    expect(got.at(-1)).toEqual({ event: "result", data: '{"replaced":true}' });
    expect(got.filter((e) => e.event === "stdout").length).toBeLessThanOrEqual(3);
    expect(h.failures).toEqual([]);
  });

  it("replaces a result larger than a buffered answer may be", async () => {
    const h = harness();
    const big = JSON.stringify({ stdout: "y".repeat(2000) });
    const relay = relayExecEvents(Readable.from([Buffer.from(`event: result\ndata: ${big}\n\n`)]), h.options);
    expect(events(await readAll(relay.body))).toEqual([{ event: "result", data: '{"replaced":true}' }]);
    expect(h.budget()).toEqual({ reserved: 1024, released: 1024 });
  });

  it("ends the session on a stream out of format, or one that ends without a result", async () => {
    for (const wire of [
      "event: stdout\ndata: not json\n\n",
      "garbage\n",
      'event: stdout\ndata: {"text":"a"}\n\n',
    ]) {
      const h = harness();
      const relay = relayExecEvents(Readable.from([Buffer.from(wire)]), h.options);
      const got = events(await readAll(relay.body));
      expect(got.at(-1)!.event).toBe("error");
      expect(JSON.parse(got.at(-1)!.data).detail.code).toBe("sandbox.bad_answer");
      expect(h.failures.map((f) => f.code)).toEqual(["sandbox.bad_answer"]);
    }
  });

  it("passes a sandbox's error event on, and ends the session on session.not_found", async () => {
    const h = harness();
    const gone = JSON.stringify({ detail: { code: "session.not_found", message: "no such session" } });
    const relay = relayExecEvents(Readable.from([Buffer.from(`event: error\ndata: ${gone}\n\n`)]), h.options);
    expect(events(await readAll(relay.body))).toEqual([{ event: "error", data: gone }]);
    expect(h.failures.map((f) => f.code)).toEqual(["session.not_found"]);
  });

  it("cuts a sandbox that does not finish by the deadline: error event, session ended", async () => {
    const h = harness({ deadlineMs: 300 });
    const upstream = new PassThrough();
    upstream.write('event: stdout\ndata: {"text":"started"}\n\n');
    const relay = relayExecEvents(upstream, h.options);
    const started = Date.now();
    const got = events(await readAll(relay.body));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(got.map((e) => e.event)).toEqual(["stdout", "error"]);
    expect(JSON.parse(got[1]!.data).detail.code).toBe("sandbox.timeout");
    expect(h.failures.map((f) => f.code)).toEqual(["sandbox.timeout"]);
    expect(upstream.destroyed).toBe(true);
  });

  it("reads the rest after the client goes away, so the call is over only when the sandbox is", async () => {
    const h = harness();
    const upstream = new PassThrough();
    upstream.write('event: stdout\ndata: {"text":"a"}\n\n');
    const relay = relayExecEvents(upstream, h.options);
    const reader = relay.body.getReader();
    await reader.read();
    await reader.cancel();
    let over = false;
    void relay.done.then(() => {
      over = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(over).toBe(false);
    upstream.end(`event: result\ndata: ${RESULT}\n\n`);
    await relay.done;
    expect(h.failures).toEqual([]);
  });

  it("ends at the deadline a stream whose client stopped reading, giving back the result's reservation", async () => {
    const h = harness({ deadlineMs: 300 });
    // Deltas, then the result: the client reads one event and then nothing (its socket full).
    const wire = `event: stdout\ndata: {"text":"a"}\n\nevent: result\ndata: ${RESULT}\n\n`;
    const relay = relayExecEvents(Readable.from([Buffer.from(wire)]), h.options);
    const reader = relay.body.getReader();
    await reader.read();
    await new Promise((resolve) => setTimeout(resolve, 50));
    // The relay has read ahead to the result and holds its reservation while the client stalls.
    expect(h.budget()).toEqual({ reserved: 1024, released: 0 });
    await relay.done;
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.budget()).toEqual({ reserved: 1024, released: 1024 });
    expect(h.failures).toEqual([]); // the sandbox did nothing wrong
    // The body ends where it stands: what was queued, and no result after it.
    const rest: string[] = [];
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      rest.push(new TextDecoder().decode(next.value));
    }
    expect(rest.join("")).toBe(`event: result\ndata: ${RESULT}\n\n`);
  });

  it("ends the stream with a capacity error when the budget stays spent, leaving the session alone", async () => {
    const h = harness({
      deadlineMs: 2_000,
      reserve: async () => {
        throw new SandpoolError("capacity.exhausted", "the gateway is holding as many answers as it may");
      },
    });
    const relay = relayExecEvents(
      Readable.from([Buffer.from(`event: result\ndata: ${RESULT}\n\n`)]),
      h.options,
    );
    const got = events(await readAll(relay.body));
    expect(got.map((e) => e.event)).toEqual(["error"]);
    expect(JSON.parse(got[0]!.data).detail.code).toBe("capacity.exhausted");
    expect(h.failures).toEqual([]);
  });

  it("treats CR, LF and CRLF as line ends, split anywhere, as a client's SSE parser does", async () => {
    const h = harness();
    const wire = `event: stdout\r\ndata: {"text":"a"}\r\n\r\nevent: stderr\rdata: {"text":"b"}\r\revent: result\ndata: ${RESULT}\r\n\r\n`;
    const relay = relayExecEvents(Readable.from([...wire].map((ch) => Buffer.from(ch))), h.options);
    expect(events(await readAll(relay.body))).toEqual([
      { event: "stdout", data: '{"text":"a"}' },
      { event: "stderr", data: '{"text":"b"}' },
      { event: "result", data: RESULT },
    ]);
    expect(h.failures).toEqual([]);
  });

  it("lets no hostile stream add an event to its client's stream", async () => {
    const forged = 'event: result\rdata: {"forged":true}\r\r';
    for (const wire of [
      // A CR inside the result's data line: one line to an LF-only reader, three to the client.
      `event: result\ndata: {"a":1}\r${forged}\n\n`,
      `event: stdout\ndata: {"text":"a"}\r${forged}\n\n`,
      `event: error\ndata: {"detail":{"code":"x","message":"m"}}\r${forged}\n\n`,
    ]) {
      const h = harness();
      const relay = relayExecEvents(Readable.from([Buffer.from(wire)]), h.options);
      const text = await readAll(relay.body);
      expect(text).not.toMatch(/\r/);
      expect(text).not.toContain("forged");
      expect(events(text).map((e) => e.event)).toEqual(["error"]);
      expect(JSON.parse(events(text)[0]!.data).detail.code).toBe("sandbox.bad_answer");
      expect(h.failures.map((f) => f.code)).toEqual(["sandbox.bad_answer"]);
    }
  });

  it("writes the result's JSON anew, and refuses a result that is not JSON", async () => {
    const h = harness();
    const spaced = '{ "tool_use_id" : "t",\t"n": 1 }';
    const relay = relayExecEvents(
      Readable.from([Buffer.from(`event: result\ndata: ${spaced}\n\n`)]),
      h.options,
    );
    expect(events(await readAll(relay.body))).toEqual([
      { event: "result", data: '{"tool_use_id":"t","n":1}' },
    ]);

    const bad = harness();
    const refused = relayExecEvents(
      Readable.from([Buffer.from('event: result\ndata: {"a":1} trailing\n\n')]),
      bad.options,
    );
    const got = events(await readAll(refused.body));
    expect(got.map((e) => e.event)).toEqual(["error"]);
    expect(JSON.parse(got[0]!.data).detail.code).toBe("sandbox.bad_answer");
    expect(bad.failures.map((f) => f.code)).toEqual(["sandbox.bad_answer"]);
    expect(bad.budget()).toEqual({ reserved: 1024, released: 1024 });
  });
});
