/**
 * Tenant isolation and workspace confinement through the real gateway. Another workspace's
 * session answers exactly like a session that never existed, on every route (pipeline step 6,
 * resolve: no oracle), and its destroy is a no-op; paths that try to leave a session's
 * workspace are refused with 403 on ListFiles, GetFile and PutFile, and nothing lands outside.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertContractResponse } from "../../support/contract.js";
import type { ContractClient } from "../../support/contract-client.js";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";

let harness: TestGateway;
let a: ContractClient;
let b: ContractClient;
let aSession: string;

async function newSession(client: ContractClient): Promise<string> {
  const answer = await client.createSession();
  expect(answer.status).toBe(201);
  return (answer.body as { session_id: string }).session_id;
}

/** Every session route as `client` sees it for `id`: status, content type and exact bytes. */
async function seenBy(client: ContractClient, id: string) {
  const answers = {
    GetSession: await client.getSession(id),
    Execute: await client.exec(id, { tool: "code_execution", input: { code: "print('reached')" } }),
    ListFiles: await client.listFiles(id),
    GetFile: await client.getFile(id, "secret.txt"),
    PutFile: await client.putFile(id, "written by a stranger", { path: "from-b.txt" }),
  };
  return Object.fromEntries(
    Object.entries(answers).map(([operation, answer]) => [
      operation,
      { status: answer.status, type: answer.headers.get("content-type"), text: answer.text },
    ]),
  );
}

beforeAll(async () => {
  harness = await startTestGateway();
  a = await harness.client("team-a");
  b = await harness.client("team-b");
  aSession = await newSession(a);
  expect((await a.putFile(aSession, "a's secret", { path: "secret.txt" })).status).toBe(201);
});
afterAll(() => harness?.close());

describe("tenant isolation", () => {
  it("answers another workspace's session with the same 404 bytes as an unknown or destroyed one", async () => {
    const destroyed = await newSession(a);
    expect((await a.destroy(destroyed)).status).toBe(204);
    const neverExisted = randomBytes(18).toString("base64url");

    const reference = await seenBy(b, neverExisted);
    for (const answer of Object.values(reference)) {
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.text)).toMatchObject({ detail: { code: "session.not_found" } });
    }
    expect(await seenBy(b, aSession)).toEqual(reference);
    expect(await seenBy(b, destroyed)).toEqual(reference);
    expect(await seenBy(a, destroyed)).toEqual(reference);
    // B's attempts reached nothing: A's workspace holds only A's file.
    const listed = await a.listFiles(aSession);
    expect((listed.body as { files: { path: string }[] }).files.map((f) => f.path)).toEqual(["secret.txt"]);
  });

  it("lets another workspace's DESTROY answer 204 and leaves the session working", async () => {
    expect((await b.destroy(aSession)).status).toBe(204);
    expect((await a.getSession(aSession)).status).toBe(200);
    expect((await a.run(aSession, "code_execution", { code: "print(6 * 7)" })).stdout).toBe("42\n");
    const file = await a.getFile(aSession, "secret.txt");
    expect(file.status).toBe(200);
    expect(file.text).toBe("a's secret");
  });

  it("does not show one workspace's files in another's sessions", async () => {
    const bSession = await newSession(b);
    const listed = await b.listFiles(bSession);
    expect(listed.status).toBe(200);
    expect((listed.body as { files: unknown[] }).files).toEqual([]);
    const got = await b.getFile(bSession, "secret.txt");
    expect(got.status).toBe(404);
    expect(got.body).toMatchObject({ detail: { code: "file.not_found" } });
    expect((await b.destroy(bSession)).status).toBe(204);
  });
});

/** Every file under `dir`, relative to it, except those under `skip`. */
async function filesUnder(dir: string, skip: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .map((entry) => path.join(entry.parentPath, entry.name))
    .filter((file) => file !== skip && !file.startsWith(`${skip}${path.sep}`))
    .map((file) => path.relative(dir, file))
    .sort();
}

describe("path escapes through the gateway", () => {
  let id: string;
  let workspace: string;
  let sandboxDir: string;
  let before: string[];
  const outside = path.join(tmpdir(), `sandpool-escape-${randomBytes(6).toString("hex")}`);

  beforeAll(async () => {
    id = await newSession(a);
    // The process runtime runs the sandbox on this machine: its workspace is a real directory,
    // two levels below the sandbox's own directory (<sandbox>/<inner session>/workspace).
    workspace = (await a.run(id, "bash_code_execution", { command: "pwd -P" })).stdout.trim();
    sandboxDir = path.dirname(path.dirname(workspace));
    await a.run(id, "bash_code_execution", { command: "mkdir -p a && ln -s / rootlink" });
    before = await filesUnder(sandboxDir, workspace);
  });

  const escapes = ["../x", "/etc/passwd", "a/../../x", "..\\x", "a\\..\\..\\x", "rootlink/etc/passwd"];

  function expectOutside(answer: { status: number; body: unknown }, what: string): void {
    expect({ what, status: answer.status, body: answer.body }).toMatchObject({
      status: 403,
      body: { detail: { code: "path.outside_workspace" } },
    });
  }

  it("refuses them on ListFiles", async () => {
    for (const target of [...escapes, "..", "/etc", "rootlink", "rootlink/tmp"]) {
      expectOutside(await a.listFiles(id, target), target);
    }
  });

  it("refuses them on GetFile", async () => {
    for (const target of escapes) expectOutside(await a.getFile(id, target), target);
  });

  it("refuses them percent-encoded in the query", async () => {
    for (const [operation, route] of [
      ["ListFiles", "files/list?path=%2e%2e%2f"],
      ["ListFiles", "files/list?path=a%2f%2e%2e%2f%2e%2e"],
      ["GetFile", "files?path=%2e%2e%2fx"],
      ["GetFile", "files?path=%2Fetc%2Fpasswd"],
      ["GetFile", "files?path=%2e%2e%5cx"],
    ] as const) {
      const answer = await a.request("GET", `/sessions/${id}/${route}`);
      assertContractResponse(operation, answer.status, answer.body);
      expectOutside(answer, route);
    }
  });

  it("refuses them on PutFile and writes nothing outside the workspace", async () => {
    // Never /etc/passwd here: these tests may run as root, and a miss would overwrite it.
    const targets = [
      "../x",
      "a/../../x",
      "..\\x",
      "a\\..\\..\\x",
      outside,
      `${outside}/x`,
      `rootlink${outside}`,
    ];
    for (const target of targets) expectOutside(await a.putFile(id, "escaped", { path: target }), target);

    // Without a path field the name comes from the file name; its directories are dropped.
    const named = await a.putFile(id, "escaped", { filename: "../../escaped-by-name.txt" });
    if (named.status === 201) expect((named.body as { path: string }).path).toBe("escaped-by-name.txt");
    else expectOutside(named, "../../escaped-by-name.txt");

    expect(await filesUnder(sandboxDir, workspace)).toEqual(before);
    expect(existsSync(outside)).toBe(false);
  });
});
