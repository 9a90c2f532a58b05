/**
 * The built sandbox image (`npm run build:sandbox-image`) serving contract v1 from a real
 * container: one session driven through every tool kind and the file routes, every JSON
 * answer checked against the contract by ContractClient.
 *
 * Needs a Docker engine and the image: skipped with a warning locally, fails under CI=true.
 */
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContractClient } from "../../support/contract-client.js";
import { dockerSuiteAvailable } from "../../support/docker-suite.js";
import { newSession } from "../../support/sandbox-server.js";

const IMAGE = "sandpool/sandbox:dev";
const SANDBOX_UID = "10001";

const available = await dockerSuiteAvailable(IMAGE);

const execFileAsync = promisify(execFile);
async function docker(...args: string[]): Promise<string> {
  const { stdout } = await execFileAsync("docker", args, { timeout: 60_000 });
  return stdout.trim();
}

/** Unique, so afterAll can remove exactly this container even if `docker run` half-failed. */
const containerName = `sandpool-test-image-${randomBytes(4).toString("hex")}`;
interface ExecBody {
  result_block: { type: string; content: { stdout: string; stderr: string; return_code: number } };
}
interface FileEntry {
  path: string;
  type: string;
  size_bytes: number;
}

let client: ContractClient;
let sessionId: string;

async function waitForHealth(baseUrl: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer yet";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const logs = await docker("logs", "--tail", "30", containerName).catch((e) => String(e));
  throw new Error(`sandbox container not healthy within ${timeoutMs / 1000} s (${last}); logs:\n${logs}`);
}

describe.skipIf(!available)(`sandbox image ${IMAGE}`, () => {
  beforeAll(async () => {
    await docker(
      "run",
      "-d",
      "--rm",
      "--name",
      containerName,
      "-p",
      "127.0.0.1::8080",
      "--label",
      "sandpool.test=1",
      IMAGE,
    );
    // e.g. "127.0.0.1:49153"
    const published = (await docker("port", containerName, "8080/tcp")).split("\n")[0] ?? "";
    const port = Number(published.slice(published.lastIndexOf(":") + 1));
    if (!Number.isInteger(port) || port <= 0)
      throw new Error(`unexpected \`docker port\` output: ${published}`);
    const baseUrl = `http://127.0.0.1:${port}`;
    await waitForHealth(baseUrl, 30_000);
    client = new ContractClient(baseUrl);
    sessionId = await newSession(client);
  });

  afterAll(async () => {
    // --rm removes it once stopped; rm -f covers a container that never started too.
    await docker("rm", "-f", containerName).catch(() => undefined);
  });

  it("runs as the unprivileged sandbox user", async () => {
    expect(await docker("inspect", "--format", "{{.Config.User}}", containerName)).toBe(SANDBOX_UID);
  });

  it("code_execution keeps interpreter state across calls", async () => {
    const first = await client.run(sessionId, "code_execution", { code: "import os\nanswer = 41" });
    expect(first).toMatchObject({ stdout: "", stderr: "", return_code: 0 });
    const second = await client.run(sessionId, "code_execution", { code: "print(answer + 1, os.getuid())" });
    expect(second).toMatchObject({ stdout: `42 ${SANDBOX_UID}\n`, stderr: "", return_code: 0 });
  });

  it("bash runs as uid 10001 inside the session's directory", async () => {
    const answer = await client.exec(sessionId, {
      tool: "bash_code_execution",
      input: { command: "id -u; pwd" },
    });
    expect(answer.status).toBe(200);
    const block = (answer.body as ExecBody).result_block;
    expect(block.type).toBe("bash_code_execution_tool_result");
    expect(block.content.return_code).toBe(0);
    const [uid, cwd] = block.content.stdout.trim().split("\n");
    expect(uid).toBe(SANDBOX_UID);
    expect(cwd).toMatch(new RegExp(`^/home/sandbox/sessions/${sessionId}(/|$)`));
  });

  it("text editor creates, views and edits a file", async () => {
    const edit = (input: Record<string, unknown>) =>
      client.run(sessionId, "text_editor_code_execution", input);
    expect(await edit({ command: "create", path: "notes.txt", file_text: "alpha\nbeta\n" })).toMatchObject({
      return_code: 0,
    });
    expect(await edit({ command: "view", path: "notes.txt" })).toMatchObject({
      stdout: "     1\talpha\n     2\tbeta\n",
      return_code: 0,
    });
    expect(
      await edit({ command: "str_replace", path: "notes.txt", old_str: "beta", new_str: "gamma" }),
    ).toMatchObject({ return_code: 0 });
    const cat = await client.run(sessionId, "bash_code_execution", { command: "cat notes.txt" });
    expect(cat.stdout).toBe("alpha\ngamma\n");
  });

  it("PutFile, ListFiles and GetFile round-trip bytes", async () => {
    const text = "hello from the host: héllo ✓\n";
    const putText = await client.putFile(sessionId, text, { path: "data/hello.txt" });
    expect(putText.status).toBe(201);
    expect(putText.body).toEqual({ path: "data/hello.txt", size_bytes: Buffer.byteLength(text) });

    const bytes = new Uint8Array(4096).map((_, i) => (i * 31) % 256);
    const putBytes = await client.putFile(sessionId, bytes, { path: "data/blob.bin" });
    expect(putBytes.body).toEqual({ path: "data/blob.bin", size_bytes: 4096 });

    const listed = await client.listFiles(sessionId, "data");
    expect(listed.status).toBe(200);
    expect((listed.body as { files: FileEntry[] }).files.map((f) => [f.path, f.type, f.size_bytes])).toEqual([
      ["data/blob.bin", "file", 4096],
      ["data/hello.txt", "file", Buffer.byteLength(text)],
    ]);

    const got = await client.getFile(sessionId, "data/hello.txt");
    expect(got.status).toBe(200);
    expect(got.text).toBe(text);
    // Binary bytes are checked inside the container, where the tools see them.
    const sha = createHash("sha256").update(bytes).digest("hex");
    const sum = await client.run(sessionId, "bash_code_execution", { command: "sha256sum data/blob.bin" });
    expect(sum.stdout).toBe(`${sha}  data/blob.bin\n`);
  });

  it("refuses paths that leave the workspace with 403", async () => {
    const escaped = await client.getFile(sessionId, "../../etc/passwd");
    expect(escaped.status).toBe(403);
    expect((escaped.body as { detail: { code: string } }).detail.code).toBe("path.outside_workspace");
  });

  it("DELETE is idempotent (204 twice) and the session is gone afterwards", async () => {
    expect((await client.destroy(sessionId)).status).toBe(204);
    expect((await client.destroy(sessionId)).status).toBe(204);
    const after = await client.exec(sessionId, { tool: "code_execution", input: { code: "print(1)" } });
    expect(after.status).toBe(404);
  });
});
