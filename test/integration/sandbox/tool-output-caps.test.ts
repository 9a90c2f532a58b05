/**
 * The editor answers at most the server's output cap per stream, marker included, however
 * large the file, the listing or the input a message echoes; no stream of any tool takes
 * more than twice the cap once JSON-escaped; and every answer is still a valid contract
 * response (checked by the client).
 */
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonCost } from "../../../src/sandbox/tools/capped-output.js";
import { TextEditor } from "../../../src/sandbox/tools/text-editor.js";
import { newSession, startTestSandbox, type TestSandbox } from "../../support/sandbox-server.js";

const MIB = 1024 * 1024;
const MARKER = /\n\[output truncated: \d+ more bytes were not kept(; [^\n]*)?\]\n$/;

describe("through the sandbox server (default 1 MiB cap)", () => {
  let sandbox: TestSandbox;
  beforeAll(async () => {
    sandbox = await startTestSandbox();
  });
  afterAll(() => sandbox.close());

  it("views a 3 MB file of newlines as at most 1 MiB, with the marker and where the rest starts", async () => {
    const id = await newSession(sandbox.client);
    await sandbox.client.run(id, "bash_code_execution", {
      command: "head -c 3000000 /dev/zero | tr '\\0' '\\n' > big.txt",
    });
    const answer = await sandbox.client.exec(id, {
      tool: "text_editor_code_execution",
      input: { command: "view", path: "big.txt" },
    });
    expect(answer.status).toBe(200);
    expect(answer.text.length).toBeLessThan(3 * MIB); // JSON escapes "\t" and "\n" to two bytes
    const content = (answer.body as { result_block: { content: { stdout: string; return_code: number } } })
      .result_block.content;
    expect(content.return_code).toBe(0);
    expect(Buffer.byteLength(content.stdout)).toBeLessThanOrEqual(MIB);
    expect(content.stdout).toMatch(MARKER);
    expect(content.stdout.startsWith("     1\t\n     2\t\n")).toBe(true);
    const shownLines = content.stdout.split("\n").filter((line) => /^\s*\d+\t$/.test(line)).length;
    expect(content.stdout).toContain(`view_range [${shownLines + 1}, 3000000] shows the rest`);
  });
});

describe("JSON-escaped size, through the sandbox server (default 1 MiB cap)", () => {
  let sandbox: TestSandbox;
  beforeAll(async () => {
    sandbox = await startTestSandbox();
  });
  afterAll(() => sandbox.close());

  it("cuts control characters (six JSON bytes each) to twice the cap, marked", async () => {
    const id = await newSession(sandbox.client);
    const answer = await sandbox.client.exec(id, {
      tool: "code_execution",
      input: { code: "import sys\nsys.stdout.write('\\x01' * 3_000_000)\nsys.stderr.write('\\x02' * 10)" },
    });
    expect(answer.status).toBe(200);
    const content = (answer.body as { result_block: { content: { stdout: string; stderr: string } } })
      .result_block.content;
    expect(jsonCost(content.stdout)).toBeLessThanOrEqual(2 * MIB);
    expect(jsonCost(content.stdout)).toBeGreaterThan(2 * MIB - 1024);
    expect(content.stdout).toMatch(/\n\[output truncated: (\d+) more bytes were not kept\]\n$/);
    // Every byte left out is counted, those the 1 MiB cap dropped first included.
    const [, omitted] = /truncated: (\d+) more/.exec(content.stdout)!;
    const kept = content.stdout.indexOf("\n[output truncated");
    expect(kept + Number(omitted)).toBe(3_000_000);
    expect(content.stderr).toBe("\x02".repeat(10));
    expect(answer.text.length).toBeLessThan(2.1 * MIB);
  });

  it("leaves a 1 MiB stdout of short lines whole", async () => {
    const id = await newSession(sandbox.client);
    const content = await sandbox.client.run(id, "code_execution", {
      code: "print('a\\n' * 500_000, end='')",
    });
    expect(content.stdout).toBe("a\n".repeat(500_000));
  });
});

describe("the editor on its own (small cap)", () => {
  const cap = 4096;
  let workspace: string;
  let editor: TextEditor;
  beforeAll(async () => {
    workspace = await realpath(await mkdtemp(path.join(tmpdir(), "sandpool-editor-cap-")));
    editor = new TextEditor(workspace);
  });
  afterAll(() => rm(workspace, { recursive: true, force: true }));

  it("caps a view_range selection too, naming the lines left out", async () => {
    await writeFile(path.join(workspace, "lines.txt"), `${"line of text\n".repeat(5000)}`);
    const outcome = await editor.run(
      { command: "view", path: "lines.txt", view_range: [100, 4000] },
      { maxOutputBytes: cap },
    );
    expect(Buffer.byteLength(outcome.stdout)).toBeLessThanOrEqual(cap);
    expect(outcome.stdout.startsWith("   100\tline of text\n")).toBe(true);
    expect(outcome.stdout).toMatch(/view_range \[\d+, 4000\] shows the rest\]\n$/);
  });

  it("leaves an answer under the cap untouched", async () => {
    await writeFile(path.join(workspace, "small.txt"), "a\nb\n");
    const outcome = await editor.run({ command: "view", path: "small.txt" }, { maxOutputBytes: cap });
    expect(outcome.stdout).toBe("     1\ta\n     2\tb\n");
  });

  it("caps a failed str_replace that echoes a huge old_str", async () => {
    await writeFile(path.join(workspace, "edit.txt"), "hello\n");
    const outcome = await editor.run(
      { command: "str_replace", path: "edit.txt", old_str: "z".repeat(2 * MIB), new_str: "" },
      { maxOutputBytes: cap },
    );
    expect(outcome.return_code).toBe(1);
    expect(Buffer.byteLength(outcome.stderr)).toBeLessThanOrEqual(cap);
    expect(outcome.stderr.startsWith("No replacement was performed, old_str `zzz")).toBe(true);
    expect(outcome.stderr).toMatch(MARKER);
  });

  it("caps a message echoing a huge path", async () => {
    const outcome = await editor.run({ command: "view", path: "p/".repeat(MIB) }, { maxOutputBytes: cap });
    expect(outcome.return_code).toBe(1);
    expect(Buffer.byteLength(outcome.stderr)).toBeLessThanOrEqual(cap);
    expect(outcome.stderr).toMatch(MARKER);
  });

  it("caps a directory listing of long names", async () => {
    const dir = path.join(workspace, "many");
    await mkdir(dir);
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        writeFile(path.join(dir, `${String(i).padStart(3, "0")}${"n".repeat(200)}`), ""),
      ),
    );
    const outcome = await editor.run({ command: "view", path: "many" }, { maxOutputBytes: cap });
    expect(outcome.return_code).toBe(0);
    expect(Buffer.byteLength(outcome.stdout)).toBeLessThanOrEqual(cap);
    expect(outcome.stdout.startsWith("Here's the files and directories")).toBe(true);
    expect(outcome.stdout).toMatch(MARKER);
  });

  it("caps the snippet of an edit inserting many lines", async () => {
    await writeFile(path.join(workspace, "insert.txt"), "a\n");
    const outcome = await editor.run(
      { command: "insert", path: "insert.txt", insert_line: 1, new_str: "new line\n".repeat(10_000) },
      { maxOutputBytes: cap },
    );
    expect(outcome.return_code).toBe(0);
    expect(Buffer.byteLength(outcome.stdout)).toBeLessThanOrEqual(cap);
    expect(outcome.stdout).toMatch(MARKER);
  });
});
