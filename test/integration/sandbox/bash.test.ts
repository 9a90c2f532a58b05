import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newSession, startTestSandbox, type TestSandbox, waitFor } from "../../support/sandbox-server.js";

/** A process that exists and is not a zombie (killed, not yet reaped by its new parent). */
function running(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ").at(-1)?.[0] !== "Z";
  } catch {
    return false;
  }
}

let sandbox: TestSandbox;
let id: string;
beforeAll(async () => {
  sandbox = await startTestSandbox({ maxOutputBytes: 4096 });
  id = await newSession(sandbox.client);
});
afterAll(() => sandbox.close());

const bash = (command: string, extra: Record<string, unknown> = {}) =>
  sandbox.client.run(id, "bash_code_execution", { command }, extra);

describe("bash_code_execution", () => {
  it("answers with the bash block type", async () => {
    const answer = await sandbox.client.exec(id, {
      tool: "bash_code_execution",
      input: { command: "echo hi" },
    });
    const block = (answer.body as any).result_block;
    expect(block.type).toBe("bash_code_execution_tool_result");
    expect(block.content).toMatchObject({ stdout: "hi\n", stderr: "", return_code: 0 });
  });

  it("reports the exit code and stderr of a failing command", async () => {
    expect(await bash("echo oops >&2; exit 7")).toMatchObject({
      stdout: "",
      stderr: "oops\n",
      return_code: 7,
    });
  });

  it("runs in the session workspace, shared with the Python interpreter", async () => {
    await bash("echo shared > note.txt");
    const read = await sandbox.client.run(id, "code_execution", {
      code: "print(open('note.txt').read().strip())",
    });
    expect(read.stdout).toBe("shared\n");
    expect((await bash("pwd")).stdout.trim()).toMatch(/\/workspace$/);
  });

  it("does not pass the server's environment to programs", async () => {
    process.env.SANDPOOL_TEST_SECRET = "hunter2";
    try {
      const env = await bash("env");
      expect(env.stdout).not.toContain("hunter2");
      expect(env.stdout).toContain("HOME=");
    } finally {
      delete process.env.SANDPOOL_TEST_SECRET;
    }
  });

  it("kills a command past its timeout, with its children", async () => {
    const started = Date.now();
    const result = await bash("sleep 30; echo never", { timeout_seconds: 1 });
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(result.return_code).toBe(124);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("timed out after 1 s");
  });

  it("returns when the command exits even if a background job holds its output open", async () => {
    const started = Date.now();
    const result = await bash("sleep 20 & echo started");
    expect(result).toMatchObject({ stdout: "started\n", return_code: 0 });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("kills the jobs a command leaves in its process group once it exits", async () => {
    const result = await bash("sleep 300 >/dev/null 2>&1 & echo $!");
    const job = Number(result.stdout.trim());
    expect(job).toBeGreaterThan(0);
    await waitFor(() => !running(job), 2_000, "the job to be killed");
  });

  it("caps huge output with a marker", async () => {
    const result = await bash("yes | head -c 1000000");
    expect(result.stdout.length).toBeLessThan(4096 + 100);
    expect(result.stdout).toMatch(/\[output truncated: 995904 more bytes were not kept\]\n$/);
  });
});
