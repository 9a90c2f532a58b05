/**
 * The gateway's memory stays bounded whatever a sandbox answers: every answer read into
 * memory is read with a cap, an Execute answer over it still answers 200 with a valid
 * result that says so, and downloads stream with backpressure. The RSS bounds are generous
 * on purpose: what they catch is a return to buffering whole answers (10 x 48 MiB here).
 */
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Lease } from "../../../src/store/coordination/records.js";
import { assertContractResponse } from "../../support/contract.js";
import type { ContractClient } from "../../support/contract-client.js";
import { type ReceivedEvent, streamExec } from "../../support/exec-event-stream.js";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";
import { type HostileSandbox, startHostileSandbox } from "../../support/hostile-sandbox.js";

const MIB = 1024 * 1024;
const ANSWER_CAP = 4 * MIB;
/** Two undeclared answers at the cap at once: the other calls wait their turn. */
const BUDGET = 2 * ANSWER_CAP;
/** How long reading an answer may take once the sandbox has started it. */
const READ_DEADLINE_MS = 5_000;
const CONCURRENT = 10;
const RSS_BOUND_MB = 150;
const WORKSPACE = "team-memory";
const MARKER = /\[output truncated: /;
/** Each hostile answer: far above the cap, small enough that a regression fails fast on RSS. */
const HOSTILE_BYTES = 48 * MIB;

let harness: TestGateway;
let client: ContractClient;
let hostile: HostileSandbox;
let template: Lease;

beforeAll(async () => {
  harness = await startTestGateway({
    limits: {
      maxSandboxAnswerBytes: ANSWER_CAP,
      maxBufferedAnswerBytes: BUDGET,
      sandboxRequestTimeoutMs: READ_DEADLINE_MS,
    },
    pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdle: 1, maxTotal: 6 }],
  });
  client = await harness.client(WORKSPACE);
  hostile = await startHostileSandbox(HOSTILE_BYTES);
  const created = await client.createSession();
  const sessionId = (created.body as { session_id: string }).session_id;
  template = (await harness.store.getLease({ workspace: WORKSPACE, sessionId })) as Lease;
});
afterAll(async () => {
  await hostile?.close();
  await harness?.close();
});

/** A session the gateway believes is served by the hostile sandbox, under `innerSessionId`. */
async function hostileSession(index: number, innerSessionId = `inner-${index}`): Promise<string> {
  const sessionId = `hostile${String(index).padStart(17, "0")}${innerSessionId.slice(0, 4)}`;
  await harness.store.putLease({
    ...template,
    sessionId,
    lastActivityAt: Date.now(),
    sandbox: {
      ...template.sandbox,
      sandboxId: `hostile-${sessionId}`,
      endpoint: hostile.url,
      innerSessionId,
    },
  });
  return sessionId;
}

/**
 * Execute sent raw, its answer read as text: checked against the contract only after the RSS
 * bound, so a gateway that passes a hostile answer through fails on memory, not on parsing.
 */
async function rawExec(id: string, payload: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${harness.url}/sessions/${id}/exec`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${await harness.token(WORKSPACE)}`,
      "content-type": "application/json",
    },
    body: JSON.stringify(payload),
  });
  return { status: res.status, text: await res.text() };
}

function validExec(answer: { status: number; text: string }): unknown {
  expect(answer.status).toBe(200);
  const body: unknown = JSON.parse(answer.text);
  assertContractResponse("Execute", answer.status, body);
  return body;
}

/** Peak RSS growth of this process (the gateway runs in it) while `run` runs, in MB. */
async function peakRssGrowthMb<T>(run: () => Promise<T>): Promise<{ growthMb: number; result: T }> {
  (globalThis as { gc?: () => void }).gc?.();
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  try {
    const result = await run();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { growthMb: (peak - baseline) / 1e6, result };
  } finally {
    clearInterval(timer);
  }
}

type ExecContent = { stdout: string; stderr: string; return_code: number };
const contentOf = (body: unknown) =>
  (body as { result_block: { content: ExecContent } }).result_block.content;

describe(`a sandbox that answers ${HOSTILE_BYTES / MIB} MiB`, () => {
  it(`answers ${CONCURRENT} concurrent Executes with valid 200 results saying so, within the RSS bound`, async () => {
    const sessions = await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => hostileSession(i)));
    const { growthMb, result } = await peakRssGrowthMb(() =>
      Promise.all(
        sessions.map((id) =>
          rawExec(id, { tool: "bash_code_execution", input: { command: "yes" }, tool_use_id: `t-${id}` }),
        ),
      ),
    );
    expect(growthMb).toBeLessThan(RSS_BOUND_MB);
    for (const [index, answer] of result.entries()) {
      const body = validExec(answer) as { tool_use_id: string; result_block: { type: string } };
      expect(body.tool_use_id).toBe(`t-${sessions[index]}`);
      expect(body.result_block.type).toBe("bash_code_execution_tool_result");
      const content = contentOf(body);
      expect(content.stdout).toBe("");
      expect(content.stderr).toMatch(MARKER);
      expect(content.stderr).toContain(`limit of ${ANSWER_CAP} bytes`);
      expect(content.return_code).not.toBe(0);
    }
    // The gateway stopped reading at its cap: nowhere near 10 whole answers left the sandbox.
    expect(hostile.written()).toBeLessThan((CONCURRENT * HOSTILE_BYTES) / 2);
    // The session survives an oversized answer: it is the payload that failed, not the sandbox.
    expect((await client.getSession(sessions[0]!)).status).toBe(200);
  }, 180_000); // a gateway that buffers it all is slow too: let it fail on the bound, not the clock

  it("refuses an answer that declares more than the cap without reading it", async () => {
    const id = await hostileSession(300, "declared-inner");
    const before = hostile.written();
    const answer = await rawExec(id, { tool: "code_execution", input: { code: "1" } });
    const content = contentOf(validExec(answer));
    expect(content.stderr).toMatch(MARKER);
    expect(hostile.written() - before).toBeLessThan(ANSWER_CAP);
  });

  it("cuts off an answer that trickles past the read deadline: 504 sandbox.timeout, session ended", async () => {
    const id = await hostileSession(400, "trickle-inner");
    const started = Date.now();
    const answer = await client.exec(id, { tool: "code_execution", input: { code: "1" } });
    expect(answer.status).toBe(504);
    expect(answer.body).toMatchObject({ detail: { code: "sandbox.timeout" } });
    expect(Date.now() - started).toBeLessThan(READ_DEADLINE_MS + 5_000);
    expect((await client.getSession(id)).status).toBe(404);
  });

  it("answers an oversized error answer with 502 sandbox.bad_answer and ends the session", async () => {
    const id = await hostileSession(100, "error-inner");
    const answer = await client.exec(id, { tool: "code_execution", input: { code: "1" } });
    expect(answer.status).toBe(502);
    expect(answer.body).toMatchObject({ detail: { code: "sandbox.bad_answer" } });
    expect((await client.getSession(id)).status).toBe(404);
  });

  it("streams a large download with backpressure: a client that stops reading stops the sandbox", async () => {
    const id = await hostileSession(200);
    const before = hostile.written();
    const token = await harness.token(WORKSPACE);
    const { growthMb, result: received } = await peakRssGrowthMb(
      () =>
        new Promise<number>((resolve, reject) => {
          const call = httpRequest(`${harness.url}/sessions/${id}/files?path=big.bin`, {
            headers: { authorization: `Bearer ${token}` },
          });
          call.on("error", reject);
          call.on("response", (response) => {
            let bytes = 0;
            response.on("data", (chunk: Buffer) => {
              bytes += chunk.length;
              if (bytes > MIB) response.pause(); // a client that reads 1 MB, then nothing
            });
            setTimeout(() => {
              call.destroy();
              resolve(bytes);
            }, 1_500);
          });
          call.end();
        }),
    );
    expect(received).toBeGreaterThan(MIB);
    // Socket and stream buffers on the way, not the file: the sandbox was held back.
    expect(hostile.written() - before).toBeLessThan(32 * MIB);
    expect(growthMb).toBeLessThan(RSS_BOUND_MB);
  });
});

describe("a real sandbox viewing a 3 MB file of newlines", () => {
  it(`answers ${CONCURRENT} concurrent views with valid, marked, truncated results within the RSS bound`, async () => {
    const sessions: string[] = [];
    for (let i = 0; i < CONCURRENT / 2; i++) {
      const created = await client.createSession();
      expect(created.status).toBe(201);
      const id = (created.body as { session_id: string }).session_id;
      const made = await client.run(id, "bash_code_execution", {
        command: "head -c 3000000 /dev/zero | tr '\\0' '\\n' > big.txt",
      });
      expect(made.return_code).toBe(0);
      sessions.push(id, id);
    }
    const { growthMb, result } = await peakRssGrowthMb(() =>
      Promise.all(
        sessions.map((id) =>
          rawExec(id, { tool: "text_editor_code_execution", input: { command: "view", path: "big.txt" } }),
        ),
      ),
    );
    expect(growthMb).toBeLessThan(RSS_BOUND_MB);
    for (const answer of result) {
      const body = validExec(answer);
      // Cut by the sandbox (about 1 MiB of stdout) or, from a sandbox without the editor's
      // cap, replaced by the gateway at its own cap: marked either way, never whole.
      expect(answer.text.length).toBeLessThanOrEqual(ANSWER_CAP + 4096);
      const content = contentOf(body);
      expect(`${content.stdout}${content.stderr}`).toMatch(MARKER);
    }
  });
});

describe(`a sandbox that streams ${HOSTILE_BYTES / MIB} MiB (Accept: text/event-stream)`, () => {
  const streamed = async (id: string) =>
    streamExec(
      harness.url,
      id,
      { tool: "bash_code_execution", input: { command: "yes" } },
      await harness.token(WORKSPACE),
    );
  const resultOf = (events: ReceivedEvent[]) => {
    expect(events.at(-1)!.event).toBe("result");
    const body: unknown = JSON.parse(events.at(-1)!.data);
    assertContractResponse("Execute", 200, body);
    return contentOf(body);
  };

  it(`relays ${CONCURRENT} concurrent endless events as the replacement result, reading little, within the RSS bound`, async () => {
    const sessions = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, i) => hostileSession(100 + i, `stream-${i}`)),
    );
    const before = hostile.written();
    const { growthMb, result } = await peakRssGrowthMb(() => Promise.all(sessions.map(streamed)));
    expect(growthMb).toBeLessThan(RSS_BOUND_MB);
    for (const answer of result) {
      expect(answer.status).toBe(200);
      expect(resultOf(answer.events).stderr).toContain("larger than the gateway's limit");
    }
    // One event is held up to 1 MiB before the gateway gives up on it: far from 10 x 48 MiB.
    expect(hostile.written() - before).toBeLessThan(CONCURRENT * 4 * MIB);
  });

  it(`relays ${CONCURRENT} concurrent plain-JSON answers (a sandbox without streaming) as one result event each`, async () => {
    const sessions = await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => hostileSession(200 + i)));
    const { growthMb, result } = await peakRssGrowthMb(() => Promise.all(sessions.map(streamed)));
    expect(growthMb).toBeLessThan(RSS_BOUND_MB);
    for (const answer of result) {
      expect(answer.events.map((e) => e.event)).toEqual(["result"]);
      expect(resultOf(answer.events).stderr).toContain("larger than the gateway's limit");
    }
  });
});
