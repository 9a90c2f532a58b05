import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContractClient } from "../../support/contract-client.js";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";

let harness: TestGateway;
let client: ContractClient;
beforeAll(async () => {
  harness = await startTestGateway();
  client = await harness.client("team-a");
});
afterAll(() => harness.close());

async function newSession(): Promise<string> {
  const answer = await client.createSession();
  expect(answer.status).toBe(201);
  return (answer.body as { session_id: string }).session_id;
}

describe("the contract through the gateway", () => {
  it("leases a session with a handle carrying the values in force", async () => {
    const answer = await client.createSession({ idle_timeout_seconds: 120, max_lifetime_seconds: 999_999 });
    expect(answer.status).toBe(201);
    const handle = answer.body as Record<string, unknown>;
    expect(handle.session_id).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(handle).toMatchObject({ idle_timeout_seconds: 120, max_lifetime_seconds: 4 * 3600 });
    const got = await client.getSession(handle.session_id as string);
    expect(got.body).toMatchObject({ session_id: handle.session_id, idle_timeout_seconds: 120 });
  });

  it("runs every tool kind with state kept between calls", async () => {
    const id = await newSession();
    await client.run(id, "code_execution", { code: "x = 20" });
    expect((await client.run(id, "code_execution", { code: "print(x + 22)" })).stdout).toBe("42\n");
    expect((await client.run(id, "bash_code_execution", { command: "echo hi; exit 3" })).return_code).toBe(3);
    const created = await client.run(id, "text_editor_code_execution", {
      command: "create",
      path: "notes.md",
      file_text: "hello\n",
    });
    expect(created.return_code).toBe(0);
    const viewed = await client.run(id, "text_editor_code_execution", { command: "view", path: "notes.md" });
    expect(viewed.stdout).toContain("hello");
  });

  it("moves files in and out", async () => {
    const id = await newSession();
    const bytes = new Uint8Array(100_000).map((_, i) => i % 251);
    const put = await client.putFile(id, bytes, { path: "in/data.bin" });
    expect(put.status).toBe(201);
    expect(put.body).toEqual({ path: "in/data.bin", size_bytes: 100_000 });
    const listed = await client.listFiles(id, "in");
    expect((listed.body as { files: { path: string }[] }).files.map((f) => f.path)).toEqual(["in/data.bin"]);
    const res = await fetch(`${harness.url}/sessions/${id}/files?path=in/data.bin`, {
      headers: { authorization: `Bearer ${await harness.token("team-a")}` },
    });
    expect(res.status).toBe(200);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(bytes);
  });

  it("destroys twice with 204, then answers 404", async () => {
    const id = await newSession();
    expect((await client.destroy(id)).status).toBe(204);
    expect((await client.destroy(id)).status).toBe(204);
    expect((await client.exec(id, { tool: "code_execution", input: { code: "1" } })).status).toBe(404);
  });
});
