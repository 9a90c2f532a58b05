/**
 * Code in a session may delete its workspace root, chmod it, or put a file or a symlink in
 * its place: the next file operation or call finds it back (an empty directory, mode 0700,
 * never what a symlink pointed to), and nothing answers a 5xx. The same against a docker
 * sandbox, with `rm -rf --no-preserve-root /` too: test/integration/docker/tampered-workspace.test.ts.
 * Here the tampering stays inside the session's own directory: this server runs on the host.
 */
import { lstat, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { newSession, startTestSandbox, type TestSandbox } from "../../support/sandbox-server.js";

let sandbox: TestSandbox;
let id: string;
const outside = path.join(tmpdir(), `sandpool-outside-${process.pid}`);

beforeAll(async () => {
  sandbox = await startTestSandbox({ maxSessions: 20 });
  await mkdir(outside, { recursive: true });
  await writeFile(path.join(outside, "precious"), "untouched");
});
afterAll(() => sandbox.close());
beforeEach(async () => {
  id = await newSession(sandbox.client);
});

const bash = (command: string) => sandbox.client.run(id, "bash_code_execution", { command });

describe.each([
  ["deleted", 'w="$PWD"; cd / && rm -rf "$w"'],
  ["chmod-ed to 000", 'chmod 000 "$PWD"'],
  ["replaced with a file", 'w="$PWD"; cd / && rm -rf "$w" && echo x > "$w"'],
  ["replaced with a symlink", `w="$PWD"; cd / && rm -rf "$w" && ln -s ${outside} "$w"`],
  [
    "in a session directory replaced with a symlink",
    `s="$(dirname "$PWD")"; cd / && rm -rf "$s" && ln -s ${outside} "$s"`,
  ],
])("a workspace root %s", (_name, tamper) => {
  it("is found back by ListFiles, PutFile, GetFile and both tools, and nothing answers a 5xx", async () => {
    await bash(tamper);
    const listed = await sandbox.client.listFiles(id, ".");
    expect(listed.status, listed.text).toBe(200);
    expect((listed.body as { files: unknown[] }).files).toEqual([]);
    const workspace = path.join(sandbox.root, id, "workspace");
    expect((await lstat(workspace)).isDirectory()).toBe(true);
    expect((await stat(workspace)).mode & 0o777).toBe(0o700);

    expect((await sandbox.client.putFile(id, "kept", { path: "a/b.txt" })).status).toBe(201);
    const got = await sandbox.client.getFile(id, "a/b.txt");
    expect([got.status, got.text]).toEqual([200, "kept"]);
    expect(await bash("cat a/b.txt")).toMatchObject({ stdout: "kept", return_code: 0 });
    const python = await sandbox.client.run(id, "code_execution", {
      code: "import os\nopen('made.txt', 'w').write('x')\nprint(sorted(os.listdir('.')))",
    });
    expect(python, python.stderr).toMatchObject({ stdout: "['a', 'made.txt']\n", return_code: 0 });
    expect(await readFile(path.join(outside, "precious"), "utf8")).toBe("untouched");
    expect((await sandbox.client.destroy(id)).status).toBe(204);
  });
});

describe("file operations that race code changing the workspace", () => {
  it("answer a FIFO, a directory and a vanished file with a 4xx, without blocking", async () => {
    await bash("mkfifo pipe; mkdir dir");
    expect((await sandbox.client.getFile(id, "pipe")).status).toBe(404);
    expect((await sandbox.client.getFile(id, "dir")).status).toBe(400);
    expect((await sandbox.client.getFile(id, "gone")).status).toBe(404);
    expect((await sandbox.client.putFile(id, "x", { path: "pipe/inside" })).status).toBe(400);
  });
});
