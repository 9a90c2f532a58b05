/**
 * `sandpool sandbox` as a real process: the built CLI's help and option errors, then a
 * server on a free port driven through every tool kind and the file endpoints, and a clean
 * SIGTERM shutdown that removes the session directories. Needs `npm run build` first.
 */
import { existsSync } from "node:fs";
import { mkdtemp, readdir, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliServer, requireBuiltCli, resolvePython, runCli, startCliServer } from "../support/cli.js";
import { ContractClient } from "../support/contract-client.js";
import { processExists } from "../support/sandbox-server.js";
import { waitFor } from "../support/wait-for.js";

beforeAll(() => requireBuiltCli());

let scratch: string;
beforeAll(async () => {
  scratch = await realpath(await mkdtemp(path.join(tmpdir(), "sandpool-e2e-")));
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const sandboxOptions = [
  "--host",
  "--port",
  "--root",
  "--python",
  "--max-sessions",
  "--idle-timeout",
  "--max-idle-timeout",
  "--max-lifetime",
  "--max-lifetime-ceiling",
  "--exec-timeout",
  "--max-exec-timeout",
  "--max-output-bytes",
  "--max-upload-bytes",
];

describe("sandpool --help", () => {
  it("lists the sandbox command", async () => {
    const result = await runCli(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: sandpool/m);
    expect(result.stdout).toMatch(/^\s+sandbox \[options\]\s+serve contract v1/m);
  });

  it("documents every option of sandpool sandbox", async () => {
    const result = await runCli(["sandbox", "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: sandpool sandbox \[options\]/m);
    for (const option of sandboxOptions) {
      expect(result.stdout, option).toMatch(new RegExp(`^\\s+${option} <\\w+>\\s+\\S`, "m"));
    }
    expect(result.stdout).toMatch(/--port <port>\s+port to listen on \(0 picks a free one\)/);
    expect(result.stdout).toMatch(/--max-exec-timeout <s>\s+ceiling for timeout_seconds/);
  });
});

describe("sandpool sandbox option errors", () => {
  it.each([
    ["--port", "abc"],
    ["--port", "70000"],
    ["--port", "-1"],
    ["--max-exec-timeout", "0"],
    ["--max-sessions", "1.5"],
  ])("refuses %s %s: non-zero exit, a message naming the option, no server", async (option, value) => {
    const root = path.join(scratch, `refused-${option.slice(2)}-${value}`);
    const result = await runCli(["sandbox", "--root", root, option, value], { timeoutMs: 10_000 });
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stderr).toContain(option);
    expect(result.stderr).toContain(value);
    expect(result.stdout).not.toContain("listening");
    expect(existsSync(root)).toBe(false);
  });

  it("refuses an unknown option", async () => {
    const result = await runCli(["sandbox", "--root", path.join(scratch, "unknown"), "--no-such-option"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("--no-such-option");
  });
});

describe("sandpool sandbox server", () => {
  let root: string;
  let server: CliServer;
  let client: ContractClient;

  beforeAll(async () => {
    requireBuiltCli();
    root = path.join(scratch, "sessions");
    const python = resolvePython();
    server = await startCliServer(
      ["sandbox", "--host", "127.0.0.1", "--port", "0", "--root", root, "--python", python],
      /^sandpool sandbox listening on (http:\/\/127\.0\.0\.1:\d+)$/,
    );
    client = new ContractClient(server.url);
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** Creates a session (201, checked against the contract) and returns its id. */
  async function newSession(): Promise<string> {
    const created = await client.createSession({});
    expect(created.status).toBe(201);
    return (created.body as { session_id: string }).session_id;
  }

  /** Runs one call (its response checked against the contract) and returns the result block. */
  async function call(id: string, tool: string, input: unknown) {
    const answer = await client.exec(id, { tool, input });
    expect(answer.status, answer.text).toBe(200);
    return (answer.body as { result_block: { type: string; content: Record<string, unknown> } }).result_block;
  }

  it("serves a session through every tool kind and the file endpoints, then destroys it", async () => {
    const id = await newSession();
    const sessionDir = path.join(root, id);
    expect(existsSync(path.join(sessionDir, "workspace"))).toBe(true);
    expect((await client.getSession(id)).status).toBe(200);

    const python = await call(id, "code_execution", { code: "x = 6 * 7\nprint(x)" });
    expect(python.type).toBe("code_execution_tool_result");
    expect(python.content).toMatchObject({ stdout: "42\n", stderr: "", return_code: 0 });

    const bash = await call(id, "bash_code_execution", { command: "echo hi && pwd" });
    expect(bash.type).toBe("bash_code_execution_tool_result");
    expect(bash.content).toMatchObject({ stdout: `hi\n${sessionDir}/workspace\n`, return_code: 0 });

    const created = await call(id, "text_editor_code_execution", {
      command: "create",
      path: "notes/a.txt",
      file_text: "alpha\nbeta\n",
    });
    expect(created.type).toBe("text_editor_code_execution_tool_result");
    expect(created.content).toMatchObject({ return_code: 0 });
    const viewed = await call(id, "text_editor_code_execution", { command: "view", path: "notes/a.txt" });
    expect(viewed.content).toMatchObject({ stdout: "     1\talpha\n     2\tbeta\n", return_code: 0 });

    const bytes = new Uint8Array(3000).map((_, i) => (i * 31) % 256);
    const put = await client.putFile(id, bytes, { path: "data/blob.bin" });
    expect(put.status).toBe(201);
    expect(put.body).toEqual({ path: "data/blob.bin", size_bytes: 3000 });
    const seen = await call(id, "code_execution", { code: "print(len(open('data/blob.bin','rb').read()))" });
    expect(seen.content).toMatchObject({ stdout: "3000\n", return_code: 0 });

    const got = await client.getFile(id, "data/blob.bin");
    expect(got.status).toBe(200);
    const download = await fetch(`${server.url}/sessions/${id}/files?path=data/blob.bin`);
    expect(download.status).toBe(200);
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(bytes);
    const text = await client.getFile(id, "notes/a.txt");
    expect(text.text).toBe("alpha\nbeta\n");

    const listed = await client.listFiles(id);
    expect(listed.status).toBe(200);
    expect((listed.body as { files: { path: string }[] }).files.map((f) => f.path)).toEqual([
      "data",
      "notes",
    ]);

    const destroyed = await client.destroy(id);
    expect(destroyed.status).toBe(204);
    expect((await client.getSession(id)).status).toBe(404);
    expect((await client.exec(id, { tool: "code_execution", input: { code: "1" } })).status).toBe(404);
    // Gone at once for every call; its files are deleted just after the answer.
    await waitFor(() => !existsSync(sessionDir), 5_000, "the session's directory deleted");
  });

  it("answers contract errors for a bad call", async () => {
    const id = await newSession();
    const bad = await client.exec(id, { tool: "no_such_tool", input: {} });
    expect(bad.status).toBe(400);
    expect((await client.getFile(id, "missing.txt")).status).toBe(404);
    expect((await client.destroy(id)).status).toBe(204);
  });

  it("exits 0 on SIGTERM within a few seconds, ending sessions and removing their directories", async () => {
    const ids = [await newSession(), await newSession()];
    const pids: number[] = [];
    for (const id of ids) {
      const block = await call(id, "code_execution", { code: "import os\nprint(os.getpid())" });
      pids.push(Number((block.content.stdout as string).trim()));
    }
    expect(pids.every((pid) => pid > 0 && processExists(pid))).toBe(true);
    expect((await readdir(root)).sort()).toEqual([...ids].sort());

    const started = Date.now();
    const code = await server.stop(5_000);
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await readdir(root)).toEqual([]);
    expect(pids.filter(processExists)).toEqual([]);
  });
});
