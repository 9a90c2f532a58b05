/**
 * A man in the middle between an edge and its node (a proxy on loopback the node advertises
 * as its URL, as a rewritten registry entry would) alters the node's answers, keeping their
 * length, and the edge takes none of it: a lease answer, an Execute's output (buffered or
 * streamed) and a file download are each refused, and nothing altered reaches the client.
 * The same calls with the proxy passing everything through are served (the controls).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ContractClient } from "../../support/contract-client.js";
import { type EdgeNodeStack, startEdgeNodeStack } from "../../support/edge-node-stack.js";
import { streamExec, streamedText } from "../../support/exec-event-stream.js";
import { redisAvailable } from "../../support/redis.js";
import { requireService } from "../../support/require-service.js";
import { replaceBytes, startTamperingProxy, type TamperingProxy } from "../../support/tampering-proxy.js";

const available = await requireService("Redis", redisAvailable, { start: "docker compose up -d redis" });

describe.skipIf(!available)("answers altered between edge and node", () => {
  let proxy: TamperingProxy;
  let stack: EdgeNodeStack;
  let client: ContractClient;

  beforeAll(async () => {
    proxy = await startTamperingProxy();
    stack = await startEdgeNodeStack({
      advertise: async (nodeUrl) => {
        proxy.target = nodeUrl;
        return proxy.url;
      },
    });
    client = await stack.client("team-a");
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
    await proxy?.close();
  }, 60_000);
  beforeEach(() => {
    proxy.rule = undefined;
    proxy.tampered = 0;
  });

  async function session(): Promise<string> {
    const created = await client.createSession();
    expect(created.status).toBe(201);
    return (created.body as { session_id: string }).session_id;
  }

  it("refuses a lease answer whose sandbox was swapped", async () => {
    // Every hex digit of the sandbox id moved by one: another sandbox, same length.
    proxy.rule = {
      path: /^\/node\/v1\/leases$/,
      rewrite: (chunk) => {
        const text = chunk.toString("latin1");
        const swapped = text.replace(/("sandboxId":")([0-9a-f]+)"/, (_all, head: string, id: string) => {
          const other = [...id].map((digit) => ((Number.parseInt(digit, 16) + 1) % 16).toString(16)).join("");
          return `${head}${other}"`;
        });
        return Buffer.from(swapped, "latin1");
      },
    };
    const created = await client.createSession();
    expect(proxy.tampered).toBeGreaterThan(0);
    expect(created.status).toBe(503);
    expect((created.body as { detail: { code: string } }).detail.code).toBe("capacity.exhausted");
    proxy.rule = undefined;
    expect((await client.createSession()).status).toBe(201);
  }, 60_000);

  it("refuses an altered Execute output, buffered: 502 sandbox.bad_answer, nothing altered shown", async () => {
    const id = await session();
    const code = { code: "print('tamper-me-' + '7')" };
    expect((await client.run(id, "code_execution", code)).stdout).toBe("tamper-me-7\n");
    proxy.rule = {
      path: /\/relay\/sessions\/[^/]+\/exec$/,
      rewrite: replaceBytes("tamper-me-7", "tamper-me-8"),
    };
    const answer = await client.exec(id, { tool: "code_execution", input: code });
    expect(proxy.tampered).toBeGreaterThan(0);
    expect(answer.status).toBe(502);
    expect(answer.text).not.toContain("tamper-me-8");
    expect((answer.body as { detail: { code: string } }).detail.code).toBe("sandbox.bad_answer");
  }, 60_000);

  it("cuts an altered Execute event stream: the frames before pass, then an error event, never a result", async () => {
    const id = await session();
    const payload = {
      tool: "code_execution",
      input: { code: "import time\nprint('first', flush=True)\ntime.sleep(0.5)\nprint('tamper-me-' + '7')" },
    };
    const token = await stack.token("team-a");
    const clean = await streamExec(stack.edge.url, id, payload, token);
    expect(streamedText(clean.events, "stdout")).toBe("first\ntamper-me-7\n");
    expect(clean.events.at(-1)?.event).toBe("result");

    proxy.rule = {
      path: /\/relay\/sessions\/[^/]+\/exec$/,
      rewrite: replaceBytes("tamper-me-7", "tamper-me-8"),
    };
    const streamed = await streamExec(stack.edge.url, id, payload, token);
    expect(proxy.tampered).toBeGreaterThan(0);
    expect(streamed.status).toBe(200);
    const all = streamed.events.map((event) => event.data).join("\n");
    expect(all).not.toContain("tamper-me-8");
    expect(streamedText(streamed.events, "stdout")).toBe("first\n");
    expect(streamed.events.some((event) => event.event === "result")).toBe(false);
    const last = streamed.events.at(-1)!;
    expect(last.event).toBe("error");
    expect(JSON.parse(last.data).detail.code).toBe("sandbox.bad_answer");
  }, 60_000);

  it("cuts an altered file download short of its length, its bytes never passed on", async () => {
    const id = await session();
    expect((await client.putFile(id, "download-secret-1", { path: "d.txt" })).status).toBe(201);
    expect((await client.getFile(id, "d.txt")).text).toBe("download-secret-1");
    proxy.rule = { path: /\/relay\/sessions\/[^/]+\/files\?/, rewrite: replaceBytes("secret-1", "secret-2") };
    const token = await stack.token("team-a");
    const res = await fetch(`${stack.edge.url}/sessions/${id}/files?path=d.txt`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body =
      res.status === 200 ? await res.text().catch((error: Error) => `failed: ${error.message}`) : "";
    expect(proxy.tampered).toBeGreaterThan(0);
    expect(body).not.toContain("secret-2");
    if (res.status === 200) expect(body).toMatch(/^failed/);
    else expect(res.status).toBe(502);
  }, 60_000);

  it("refuses an answer whose signed headers were altered: no error code can be slipped in", async () => {
    const id = await session();
    proxy.rule = {
      path: /\/relay\/sessions\/[^/]+\/exec$/,
      rewriteHeaders: (headers) => ({ ...headers, "x-sandpool-node-error": "session.not_found" }),
    };
    const answer = await client.exec(id, { tool: "bash_code_execution", input: { command: "true" } });
    expect(proxy.tampered).toBeGreaterThan(0);
    expect(answer.status).toBe(502);
    expect((answer.body as { detail: { code: string } }).detail.code).toBe("sandbox.bad_answer");
  }, 60_000);
});
