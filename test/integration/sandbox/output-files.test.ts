import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_OUTPUT_FILES } from "../../../src/sandbox/files/workspace-snapshot.js";
import { newSession, startTestSandbox, type TestSandbox } from "../../support/sandbox-server.js";

type Block = { type: string; file_id: string; filename: string };

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox();
});
afterAll(() => sandbox.close());

async function files(id: string, tool: string, input: unknown): Promise<Block[]> {
  const answer = await sandbox.client.exec(id, { tool, input });
  expect(answer.status).toBe(200);
  return (answer.body as { result_block: { content: { content: Block[] } } }).result_block.content.content;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** GetFile's bytes, as they are (the contract client reads text). */
async function fileBytes(id: string, fileId: string): Promise<Buffer> {
  const res = await fetch(`${sandbox.server.url}/sessions/${id}/files?path=${encodeURIComponent(fileId)}`);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe("output files", () => {
  it("lists a file Python writes in a new directory, and GetFile returns its bytes", async () => {
    const id = await newSession(sandbox.client);
    const listed = await files(id, "code_execution", {
      code: [
        "import os",
        "os.makedirs('out', exist_ok=True)",
        "open('out/data.csv', 'w').write('a,b\\n1,2\\n')",
        "open('chart.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + bytes(100))",
      ].join("\n"),
    });
    expect(listed.map((b) => b.file_id).sort()).toEqual(["chart.png", "out/data.csv"]);
    expect(listed.find((b) => b.file_id === "out/data.csv")).toEqual({
      type: "code_execution_output",
      file_id: "out/data.csv",
      filename: "data.csv",
    });
    const png = await fileBytes(id, listed.find((b) => b.filename === "chart.png")!.file_id);
    expect(png.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(png).toHaveLength(108);
    const csv = await sandbox.client.getFile(id, listed.find((b) => b.filename === "data.csv")!.file_id);
    expect(csv.text).toBe("a,b\n1,2\n");
  });

  it("lists what bash writes, not the files it leaves unchanged nor hidden ones", async () => {
    const id = await newSession(sandbox.client);
    await files(id, "bash_code_execution", { command: "echo old > kept.txt" });
    const listed = await files(id, "bash_code_execution", {
      command:
        "echo > x.txt; cat kept.txt > /dev/null; mkdir -p .cache __pycache__ .config/app; echo h > .hidden; echo c > .cache/c; echo p > __pycache__/m.pyc; echo k > .config/app/k",
    });
    expect(listed.map((b) => b.file_id)).toEqual(["x.txt"]);
    // A file rewritten with new content is a changed file.
    const again = await files(id, "bash_code_execution", { command: "echo newer content > kept.txt" });
    expect(again.map((b) => b.file_id)).toEqual(["kept.txt"]);
    // A call that writes nothing lists nothing.
    expect(await files(id, "code_execution", { code: "print(1)" })).toEqual([]);
  });

  it("lists the editor's create, str_replace and insert", async () => {
    const id = await newSession(sandbox.client);
    const created = await files(id, "text_editor_code_execution", {
      command: "create",
      path: "notes/a.txt",
      file_text: "one\ntwo\n",
    });
    expect(created.map((b) => b.file_id)).toEqual(["notes/a.txt"]);
    const replaced = await files(id, "text_editor_code_execution", {
      command: "str_replace",
      path: "notes/a.txt",
      old_str: "two",
      new_str: "three",
    });
    expect(replaced.map((b) => b.file_id)).toEqual(["notes/a.txt"]);
    const inserted = await files(id, "text_editor_code_execution", {
      command: "insert",
      path: "notes/a.txt",
      insert_line: 0,
      new_str: "zero",
    });
    expect(inserted.map((b) => b.file_id)).toEqual(["notes/a.txt"]);
    const viewed = await files(id, "text_editor_code_execution", { command: "view", path: "notes/a.txt" });
    expect(viewed).toEqual([]);
  });

  it(`lists at most ${MAX_OUTPUT_FILES} files, newest first`, async () => {
    const id = await newSession(sandbox.client);
    const listed = await files(id, "code_execution", {
      code: [
        "import os, time",
        "for i in range(50):",
        "    open(f'f{i:02}.txt', 'w').write(str(i))",
        "os.utime('f07.txt', (time.time() + 60, time.time() + 60))",
      ].join("\n"),
    });
    expect(listed).toHaveLength(MAX_OUTPUT_FILES);
    expect(listed[0]!.file_id).toBe("f07.txt");
    expect(new Set(listed.map((b) => b.file_id)).size).toBe(MAX_OUTPUT_FILES);
  });

  it("never follows a symlink", async () => {
    const id = await newSession(sandbox.client);
    const listed = await files(id, "bash_code_execution", {
      command: "ln -s /etc/hostname link; echo r > real.txt",
    });
    expect(listed.map((b) => b.file_id)).toEqual(["real.txt"]);
  });
});

describe("output files in an unreadable directory", () => {
  // As root (CI containers) the directory stays readable; as any other user locked/a is unseen.
  it("leaves out what it cannot read, and the call still answers", async () => {
    const id = await newSession(sandbox.client);
    const listed = await files(id, "bash_code_execution", {
      command: "mkdir -p locked open && echo a > locked/a && echo b > open/b && chmod 000 locked",
    });
    expect(listed.map((b) => b.file_id)).toContain("open/b");
    await files(id, "bash_code_execution", { command: "chmod 700 locked" });
  });
});
