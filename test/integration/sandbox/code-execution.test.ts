import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newSession, startTestSandbox, type TestSandbox } from "../../support/sandbox-server.js";

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox({ maxOutputBytes: 64 * 1024 });
});
afterAll(() => sandbox.close());

const python = (id: string, code: string, extra: Record<string, unknown> = {}) =>
  sandbox.client.run(id, "code_execution", { code }, extra);

describe("code_execution", () => {
  it("returns the envelope with the block type, echoed tool_use_id and timing", async () => {
    const id = await newSession(sandbox.client);
    const answer = await sandbox.client.exec(id, {
      tool: "code_execution",
      input: { code: "print(2 + 2)" },
      tool_use_id: "srvtoolu_abc",
    });
    expect(answer.status).toBe(200);
    const body = answer.body as Record<string, any>;
    expect(body.tool_use_id).toBe("srvtoolu_abc");
    expect(body.result_block.tool_use_id).toBe("srvtoolu_abc");
    expect(body.result_block.type).toBe("code_execution_tool_result");
    expect(body.result_block.content).toEqual({
      type: "code_execution_result",
      stdout: "4\n",
      stderr: "",
      return_code: 0,
      content: [],
    });
    expect(body.execution_time_ms).toBeGreaterThanOrEqual(0);
  });

  it("generates a tool_use_id when none is sent", async () => {
    const id = await newSession(sandbox.client);
    const answer = await sandbox.client.exec(id, { tool: "code_execution", input: { code: "pass" } });
    const body = answer.body as Record<string, any>;
    expect(body.tool_use_id).toMatch(/^srvtoolu_[0-9a-f]{24}$/);
    expect(body.result_block.tool_use_id).toBe(body.tool_use_id);
  });

  it("keeps variables and imports between calls", async () => {
    const id = await newSession(sandbox.client);
    await python(id, "import math\nx = 41");
    const result = await python(id, "print(x + 1, math.floor(2.5))");
    expect(result).toMatchObject({ stdout: "42 2\n", return_code: 0 });
  });

  it("separates stdout and stderr, including a subprocess's output", async () => {
    const id = await newSession(sandbox.client);
    const result = await python(
      id,
      "import sys, os\nprint('out')\nprint('err', file=sys.stderr)\nos.system('echo sub')",
    );
    expect(result.stdout).toBe("out\nsub\n");
    expect(result.stderr).toBe("err\n");
  });

  it("reports an exception as a traceback of the user's cell with return_code 1", async () => {
    const id = await newSession(sandbox.client);
    const result = await python(id, "def f():\n    raise ValueError('boom')\nf()");
    expect(result.return_code).toBe(1);
    expect(result.stderr).toMatch(/^Traceback \(most recent call last\):\n {2}File "<cell>", line 3/);
    expect(result.stderr).toContain("ValueError: boom");
    expect(result.stderr).not.toContain("_run");
  });

  it("reports a syntax error", async () => {
    const id = await newSession(sandbox.client);
    const result = await python(id, "def (:");
    expect(result.return_code).toBe(1);
    expect(result.stderr).toContain("SyntaxError");
  });

  it("turns sys.exit into the return code and keeps the interpreter", async () => {
    const id = await newSession(sandbox.client);
    await python(id, "kept = 'yes'");
    expect((await python(id, "import sys\nsys.exit(3)")).return_code).toBe(3);
    expect((await python(id, "print(kept)")).stdout).toBe("yes\n");
  });

  it("restarts an interpreter that user code killed, and says so", async () => {
    const id = await newSession(sandbox.client);
    await python(id, "lost = 1");
    const killed = await python(id, "import os\nprint('before', flush=True)\nos._exit(5)");
    expect(killed.return_code).toBe(5);
    expect(killed.stdout).toBe("before\n");
    expect(killed.stderr).toMatch(/exited \(exit status 5\).*restarted/s);
    const after = await python(id, "print(lost)");
    expect(after.return_code).toBe(1);
    expect(after.stderr).toContain("NameError");
    expect((await python(id, "print('alive')")).stdout).toBe("alive\n");
  });

  it("interrupts a call past its timeout and keeps the session's state", async () => {
    const id = await newSession(sandbox.client);
    await python(id, "survivor = 7");
    const started = Date.now();
    const result = await python(id, "while True:\n    pass", { timeout_seconds: 1 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result.return_code).toBe(124);
    expect(result.stderr).toContain("KeyboardInterrupt");
    expect(result.stderr).toContain("timed out after 1 s");
    // The traceback starts and ends in the user's cell: none of the driver's frames (its
    // SIGINT handler raised the interrupt) show.
    expect(result.stderr).toMatch(
      /^Traceback \(most recent call last\):\n {2}File "<cell>", line [12], in <module>\nKeyboardInterrupt/,
    );
    expect(result.stderr).not.toContain("<string>");
    expect(result.stderr).not.toContain("_on_sigint");
    expect((await python(id, "print(survivor)")).stdout).toBe("7\n");
  });

  it("kills and restarts an interpreter that ignores the interrupt", async () => {
    const id = await newSession(sandbox.client);
    const code =
      "import time\nwhile True:\n    try:\n        time.sleep(5)\n    except KeyboardInterrupt:\n        pass";
    const result = await python(id, code, { timeout_seconds: 1 });
    expect(result.return_code).toBe(124);
    expect(result.stderr).toMatch(/timed out after 1 s\. It was restarted/);
    expect((await python(id, "print('fresh')")).stdout).toBe("fresh\n");
  });

  it("truncates huge output with a marker instead of buffering it", async () => {
    const id = await newSession(sandbox.client);
    const result = await python(id, "import sys\nsys.stdout.write('x' * 5_000_000)");
    expect(result.stdout.length).toBeLessThan(70 * 1024);
    expect(result.stdout.startsWith("x".repeat(1000))).toBe(true);
    expect(result.stdout).toMatch(/\[output truncated: \d+ more bytes were not kept\]\n$/);
  });

  it("stays responsive while another session loops forever", async () => {
    const busy = await newSession(sandbox.client);
    const looping = python(busy, "while True:\n    pass", { timeout_seconds: 3 });
    const other = await newSession(sandbox.client);
    const started = Date.now();
    expect((await python(other, "print('quick')")).stdout).toBe("quick\n");
    const health = await sandbox.client.request("GET", "/health");
    expect(health.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect((await looping).return_code).toBe(124);
  });

  it("runs calls of one session one at a time, in order", async () => {
    const id = await newSession(sandbox.client);
    await python(id, "log = []");
    await Promise.all([
      python(id, "import time\ntime.sleep(0.2)\nlog.append(1)"),
      python(id, "log.append(2)"),
    ]);
    expect((await python(id, "print(log)")).stdout).toBe("[1, 2]\n");
  });

  it("runs in the session's workspace and cannot read input", async () => {
    const id = await newSession(sandbox.client);
    const result = await python(id, "import os\nprint(os.getcwd().endswith('/workspace'))\ninput()");
    expect(result.stdout).toBe("True\n");
    expect(result.stderr).toContain("EOFError");
  });
});
