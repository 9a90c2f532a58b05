import {
  chmod,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TextEditorInput } from "../../../src/contract/schemas.js";
import { TextEditor } from "../../../src/sandbox/tools/text-editor.js";

let workspace: string;
let outside: string;
let editor: TextEditor;

beforeEach(async () => {
  workspace = await realpath(await mkdtemp(path.join(tmpdir(), "sandpool-editor-")));
  outside = await realpath(await mkdtemp(path.join(tmpdir(), "sandpool-editor-outside-")));
  editor = new TextEditor(workspace);
});

afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

const at = (relative: string) => path.join(workspace, relative);
const contentOf = (relative: string) => readFile(at(relative), "utf8");
const put = (relative: string, content: string | Buffer) => writeFile(at(relative), content);

/** Runs a command that must succeed; returns its stdout. */
async function ok(input: TextEditorInput): Promise<string> {
  const outcome = await editor.run(input);
  expect(outcome.stderr).toBe("");
  expect(outcome.return_code).toBe(0);
  return outcome.stdout;
}

/** Runs a command that must fail in the payload; returns its stderr. */
async function fails(input: TextEditorInput): Promise<string> {
  const outcome = await editor.run(input);
  expect(outcome.return_code).toBe(1);
  expect(outcome.stdout).toBe("");
  expect(outcome.stderr).not.toBe("");
  return outcome.stderr;
}

const twelveLines = `${Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join("\n")}\n`;

describe("view", () => {
  it("shows a file with cat -n line numbers", async () => {
    await put("a.txt", "alpha\nbeta\ngamma\n");
    expect(await ok({ command: "view", path: "a.txt" })).toBe("     1\talpha\n     2\tbeta\n     3\tgamma\n");
  });

  it("counts a last line without a final newline", async () => {
    await put("a.txt", "alpha\nbeta");
    expect(await ok({ command: "view", path: "a.txt" })).toBe("     1\talpha\n     2\tbeta\n");
  });

  it("honors view_range, with -1 meaning to the end", async () => {
    await put("a.txt", "one\ntwo\nthree\nfour\n");
    expect(await ok({ command: "view", path: "a.txt", view_range: [2, 3] })).toBe(
      "     2\ttwo\n     3\tthree\n",
    );
    expect(await ok({ command: "view", path: "a.txt", view_range: [3, -1] })).toBe(
      "     3\tthree\n     4\tfour\n",
    );
    expect(await ok({ command: "view", path: "a.txt", view_range: [4, 4] })).toBe("     4\tfour\n");
    expect(await ok({ command: "view", path: "a.txt", view_range: [1, 4] })).toBe(
      "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n",
    );
  });

  it("refuses view_range values outside the file with the valid bounds", async () => {
    await put("a.txt", "one\ntwo\nthree\n");
    expect(await fails({ command: "view", path: "a.txt", view_range: [0, 2] })).toContain(
      "its first element `0` should be within the range of lines of the file: [1, 3]",
    );
    expect(await fails({ command: "view", path: "a.txt", view_range: [4, -1] })).toContain(
      "its first element `4` should be within the range of lines of the file: [1, 3]",
    );
    expect(await fails({ command: "view", path: "a.txt", view_range: [3, 2] })).toContain(
      "its second element `2` should be greater than or equal to its first element `3`",
    );
    expect(await fails({ command: "view", path: "a.txt", view_range: [1, 4] })).toContain(
      "its second element `4` should not exceed the number of lines in the file: 3",
    );
  });

  it("lists a directory two levels deep, without hidden entries", async () => {
    await put("b.txt", "");
    await put(".env", "SECRET=1");
    await mkdir(at("src/lib/deep"), { recursive: true });
    await mkdir(at("src/.git"));
    await put("src/main.ts", "");
    await put("src/.hidden.ts", "");
    await put("src/lib/util.ts", "");
    await put("src/lib/deep/too-deep.ts", "");
    expect(await ok({ command: "view", path: "." })).toBe(
      "Here's the files and directories up to 2 levels deep in ., excluding hidden items:\n" +
        "b.txt\nsrc/\nsrc/lib/\nsrc/main.ts\n",
    );
    expect(await ok({ command: "view", path: "src" })).toBe(
      "Here's the files and directories up to 2 levels deep in src, excluding hidden items:\n" +
        "src/lib/\nsrc/lib/deep/\nsrc/lib/util.ts\nsrc/main.ts\n",
    );
  });

  it("refuses view_range on a directory", async () => {
    await mkdir(at("dir"));
    expect(await fails({ command: "view", path: "dir", view_range: [1, 2] })).toContain(
      "The `view_range` parameter is not allowed when `path` points to a directory.",
    );
  });

  it("reports a missing file", async () => {
    expect(await fails({ command: "view", path: "nope.txt" })).toBe(
      "The path nope.txt does not exist. Please provide a valid path.\n",
    );
  });

  it("refuses binary, non-UTF-8 and oversized files", async () => {
    await put("bin.dat", Buffer.from([0x68, 0x00, 0x69]));
    expect(await fails({ command: "view", path: "bin.dat" })).toContain("File bin.dat is binary");
    await put("latin1.txt", Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    expect(await fails({ command: "view", path: "latin1.txt" })).toContain("is not valid UTF-8 text");
    editor = new TextEditor(workspace, { maxFileBytes: 8 });
    await put("big.txt", "0123456789");
    expect(await fails({ command: "view", path: "big.txt" })).toContain(
      "File big.txt is 10 bytes, above the editor's limit of 8 bytes.",
    );
    expect(await fails({ command: "create", path: "big2.txt", file_text: "0123456789" })).toContain(
      "it would be 10 bytes, above the editor's limit of 8 bytes",
    );
    await expect(stat(at("big2.txt"))).rejects.toThrow();
  });
});

describe("create", () => {
  it("creates a file and its parent directories", async () => {
    expect(await ok({ command: "create", path: "pkg/sub/new.py", file_text: "print('hi')\n" })).toBe(
      "File created successfully at: pkg/sub/new.py\n",
    );
    expect(await contentOf("pkg/sub/new.py")).toBe("print('hi')\n");
    expect(await readdir(at("pkg/sub"))).toEqual(["new.py"]);
  });

  it("refuses to overwrite an existing file", async () => {
    await put("a.txt", "original");
    expect(await fails({ command: "create", path: "a.txt", file_text: "replacement" })).toBe(
      "File already exists at: a.txt. Cannot overwrite files using command `create`.\n",
    );
    expect(await contentOf("a.txt")).toBe("original");
  });

  it("leaves nothing to undo", async () => {
    await ok({ command: "create", path: "a.txt", file_text: "x" });
    expect(await fails({ command: "undo_edit", path: "a.txt" })).toBe("No edit history found for a.txt.\n");
    expect(await contentOf("a.txt")).toBe("x");
  });
});

describe("str_replace", () => {
  it("replaces the unique occurrence and shows a snippet around it", async () => {
    await put("a.txt", twelveLines);
    const stdout = await ok({
      command: "str_replace",
      path: "a.txt",
      old_str: "line 6\n",
      new_str: "six\nSIX\n",
    });
    expect(await contentOf("a.txt")).toBe(twelveLines.replace("line 6\n", "six\nSIX\n"));
    expect(stdout).toBe(
      "The file a.txt has been edited. Here's the result of running `cat -n` on a snippet of a.txt:\n" +
        "     2\tline 2\n     3\tline 3\n     4\tline 4\n     5\tline 5\n" +
        "     6\tsix\n     7\tSIX\n" +
        "     8\tline 7\n     9\tline 8\n    10\tline 9\n    11\tline 10\n    12\tline 11\n" +
        "Review the changes and make sure they are as expected. Edit the file again if necessary.\n",
    );
  });

  it("deletes old_str when new_str is absent or null", async () => {
    await put("a.txt", "keep drop keep\n");
    await ok({ command: "str_replace", path: "a.txt", old_str: " drop" });
    expect(await contentOf("a.txt")).toBe("keep keep\n");
    await ok({ command: "str_replace", path: "a.txt", old_str: "keep\n", new_str: null });
    expect(await contentOf("a.txt")).toBe("keep ");
  });

  it("inserts replacement patterns verbatim", async () => {
    await put("a.txt", "price: X\n");
    await ok({ command: "str_replace", path: "a.txt", old_str: "X", new_str: "$& $1 $$" });
    expect(await contentOf("a.txt")).toBe("price: $& $1 $$\n");
  });

  it("reports zero matches", async () => {
    await put("a.txt", "hello\n");
    expect(await fails({ command: "str_replace", path: "a.txt", old_str: "bye", new_str: "x" })).toBe(
      "No replacement was performed, old_str `bye` did not appear verbatim in a.txt.\n",
    );
    expect(await contentOf("a.txt")).toBe("hello\n");
  });

  it("reports multiple matches with their line numbers", async () => {
    await put("a.txt", "x = 1\nfoo()\ny = 2\nfoo()\n");
    expect(await fails({ command: "str_replace", path: "a.txt", old_str: "foo()", new_str: "bar()" })).toBe(
      "No replacement was performed. Multiple occurrences of old_str `foo()` in lines 2, 4. Please ensure it is unique.\n",
    );
    expect(await contentOf("a.txt")).toBe("x = 1\nfoo()\ny = 2\nfoo()\n");
  });

  it("treats overlapping matches as ambiguous", async () => {
    await put("a.txt", "aaa\n");
    expect(await fails({ command: "str_replace", path: "a.txt", old_str: "aa", new_str: "b" })).toContain(
      "Multiple occurrences of old_str `aa` in lines 1.",
    );
  });

  it("reports a missing file", async () => {
    expect(await fails({ command: "str_replace", path: "gone.txt", old_str: "a", new_str: "b" })).toBe(
      "The path gone.txt does not exist. Please provide a valid path.\n",
    );
  });

  it("keeps the file's mode, CRLF line endings and BOM, and leaves no temporary file", async () => {
    await put("run.sh", "\ufeffecho one\r\necho two\r\n");
    await chmod(at("run.sh"), 0o751);
    await ok({ command: "str_replace", path: "run.sh", old_str: "two", new_str: "three" });
    expect(await contentOf("run.sh")).toBe("\ufeffecho one\r\necho three\r\n");
    expect((await stat(at("run.sh"))).mode & 0o777).toBe(0o751);
    expect(await readdir(workspace)).toEqual(["run.sh"]);
  });

  it("refuses a directory", async () => {
    await mkdir(at("dir"));
    expect(await fails({ command: "str_replace", path: "dir", old_str: "a", new_str: "b" })).toBe(
      "The path dir is a directory, not a file.\n",
    );
  });

  it("serializes concurrent edits of one file", async () => {
    await put("a.txt", "one\ntwo\n");
    await Promise.all([
      ok({ command: "str_replace", path: "a.txt", old_str: "one", new_str: "1" }),
      ok({ command: "str_replace", path: "a.txt", old_str: "two", new_str: "2" }),
    ]);
    expect(await contentOf("a.txt")).toBe("1\n2\n");
  });
});

describe("insert", () => {
  it("inserts at the top, in the middle and at the end", async () => {
    await put("a.txt", "b\nd\n");
    await ok({ command: "insert", path: "a.txt", insert_line: 0, new_str: "a" });
    expect(await contentOf("a.txt")).toBe("a\nb\nd\n");
    await ok({ command: "insert", path: "a.txt", insert_line: 2, new_str: "c1\nc2\n" });
    expect(await contentOf("a.txt")).toBe("a\nb\nc1\nc2\nd\n");
    await ok({ command: "insert", path: "a.txt", insert_line: 5, new_str: "e" });
    expect(await contentOf("a.txt")).toBe("a\nb\nc1\nc2\nd\ne\n");
  });

  it("appends to a file without a final newline, keeping it without one", async () => {
    await put("a.txt", "a\nb");
    await ok({ command: "insert", path: "a.txt", insert_line: 2, new_str: "c" });
    expect(await contentOf("a.txt")).toBe("a\nb\nc");
  });

  it("shows a snippet around the inserted lines", async () => {
    await put("a.txt", twelveLines);
    const stdout = await ok({ command: "insert", path: "a.txt", insert_line: 10, new_str: "new" });
    expect(stdout).toBe(
      "The file a.txt has been edited. Here's the result of running `cat -n` on a snippet of a.txt:\n" +
        "     7\tline 7\n     8\tline 8\n     9\tline 9\n    10\tline 10\n" +
        "    11\tnew\n" +
        "    12\tline 11\n    13\tline 12\n" +
        "Review the changes and make sure they are as expected. Edit the file again if necessary.\n",
    );
  });

  it("refuses a line outside the file with the valid range", async () => {
    await put("a.txt", "a\nb\nc\n");
    expect(await fails({ command: "insert", path: "a.txt", insert_line: 4, new_str: "x" })).toBe(
      "Invalid `insert_line` parameter: 4. It should be within the range of lines of the file: [0, 3].\n",
    );
    expect(await contentOf("a.txt")).toBe("a\nb\nc\n");
  });
});

describe("undo_edit", () => {
  it("reports a file with no history", async () => {
    await put("a.txt", "a\n");
    expect(await fails({ command: "undo_edit", path: "a.txt" })).toBe("No edit history found for a.txt.\n");
  });

  it("restores several steps in reverse order, per file", async () => {
    await ok({ command: "create", path: "a.txt", file_text: "v0\n" });
    await put("other.txt", "o0\n");
    await ok({ command: "str_replace", path: "a.txt", old_str: "v0", new_str: "v1" });
    await ok({ command: "str_replace", path: "other.txt", old_str: "o0", new_str: "o1" });
    await ok({ command: "insert", path: "a.txt", insert_line: 1, new_str: "v2" });
    await ok({ command: "str_replace", path: "a.txt", old_str: "v2", new_str: "v3" });
    expect(await contentOf("a.txt")).toBe("v1\nv3\n");

    expect(await ok({ command: "undo_edit", path: "a.txt" })).toBe(
      "Last edit to a.txt undone successfully.\n",
    );
    expect(await contentOf("a.txt")).toBe("v1\nv2\n");
    await ok({ command: "undo_edit", path: "a.txt" });
    expect(await contentOf("a.txt")).toBe("v1\n");
    await ok({ command: "undo_edit", path: "a.txt" });
    expect(await contentOf("a.txt")).toBe("v0\n");
    expect(await fails({ command: "undo_edit", path: "a.txt" })).toBe("No edit history found for a.txt.\n");
    expect(await contentOf("a.txt")).toBe("v0\n");

    expect(await contentOf("other.txt")).toBe("o1\n");
    await ok({ command: "undo_edit", path: "other.txt" });
    expect(await contentOf("other.txt")).toBe("o0\n");
  });
});

describe("path confinement", () => {
  const outsideWorkspace = "is outside the session workspace";

  it("refuses .. segments for every command", async () => {
    await writeFile(path.join(outside, "x.txt"), "secret\n");
    const climbing = `../${path.basename(outside)}/x.txt`;
    expect(await fails({ command: "view", path: climbing })).toContain(outsideWorkspace);
    expect(await fails({ command: "create", path: "../escaped.txt", file_text: "x" })).toContain(
      outsideWorkspace,
    );
    expect(
      await fails({ command: "str_replace", path: climbing, old_str: "secret", new_str: "x" }),
    ).toContain(outsideWorkspace);
    expect(await fails({ command: "insert", path: climbing, insert_line: 0, new_str: "x" })).toContain(
      outsideWorkspace,
    );
    expect(await readFile(path.join(outside, "x.txt"), "utf8")).toBe("secret\n");
    await expect(stat(path.join(path.dirname(workspace), "escaped.txt"))).rejects.toThrow();
  });

  it("refuses absolute paths outside the workspace", async () => {
    expect(await fails({ command: "view", path: "/etc/passwd" })).toContain(outsideWorkspace);
    expect(await fails({ command: "create", path: path.join(outside, "new.txt"), file_text: "x" })).toContain(
      outsideWorkspace,
    );
    expect(await readdir(outside)).toEqual([]);
  });

  it("refuses an absolute path that climbs out after the workspace prefix", async () => {
    expect(await fails({ command: "view", path: `${workspace}/../${path.basename(outside)}` })).toContain(
      outsideWorkspace,
    );
  });

  it("accepts an absolute path inside the workspace", async () => {
    expect(await ok({ command: "create", path: at("abs.txt"), file_text: "a\n" })).toBe(
      "File created successfully at: abs.txt\n",
    );
    expect(await ok({ command: "view", path: at("abs.txt") })).toBe("     1\ta\n");
    expect(await ok({ command: "view", path: workspace })).toBe(
      "Here's the files and directories up to 2 levels deep in ., excluding hidden items:\nabs.txt\n",
    );
  });

  it("refuses a symlink to a file outside", async () => {
    await writeFile(path.join(outside, "secret.txt"), "secret\n");
    await symlink(path.join(outside, "secret.txt"), at("link.txt"));
    expect(await fails({ command: "view", path: "link.txt" })).toContain(outsideWorkspace);
    expect(
      await fails({ command: "str_replace", path: "link.txt", old_str: "secret", new_str: "x" }),
    ).toContain(outsideWorkspace);
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("secret\n");
  });

  it("refuses a path through a symlinked directory outside", async () => {
    await symlink(outside, at("linkdir"));
    expect(await fails({ command: "create", path: "linkdir/new.txt", file_text: "x" })).toContain(
      outsideWorkspace,
    );
    expect(await fails({ command: "view", path: "linkdir" })).toContain(outsideWorkspace);
    expect(await readdir(outside)).toEqual([]);
  });

  it("lists a symlink without following it", async () => {
    await symlink(outside, at("linkdir"));
    await writeFile(path.join(outside, "hidden-away.txt"), "");
    expect(await ok({ command: "view", path: "." })).toBe(
      "Here's the files and directories up to 2 levels deep in ., excluding hidden items:\nlinkdir\n",
    );
  });

  it("edits through a symlink that stays inside, keeping the link", async () => {
    await put("real.txt", "old\n");
    await symlink("real.txt", at("alias.txt"));
    await ok({ command: "str_replace", path: "alias.txt", old_str: "old", new_str: "new" });
    expect(await contentOf("real.txt")).toBe("new\n");
    expect(await realpath(at("alias.txt"))).toBe(at("real.txt"));
  });

  it("refuses backslashes and control characters", async () => {
    expect(await fails({ command: "create", path: "a\\b.txt", file_text: "x" })).toContain(outsideWorkspace);
    expect(await fails({ command: "create", path: "a\nb.txt", file_text: "x" })).toContain(outsideWorkspace);
    expect(await readdir(workspace)).toEqual([]);
  });
});
