import { readdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { Pool } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newSession, startTestSandbox, type TestSandbox } from "../../support/sandbox-server.js";

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox({ maxUploadBytes: 64 * 1024 });
});
afterAll(() => sandbox.close());

const workspaceOf = (id: string) => path.join(sandbox.root, id, "workspace");

describe("PutFile / GetFile / ListFiles", () => {
  it("round-trips binary bytes at a nested path and lists them", async () => {
    const id = await newSession(sandbox.client);
    const bytes = new Uint8Array(5000).map((_, i) => (i * 7) % 256);
    const put = await sandbox.client.putFile(id, bytes, { path: "data/in/blob.bin" });
    expect(put.status).toBe(201);
    expect(put.body).toEqual({ path: "data/in/blob.bin", size_bytes: 5000 });

    const res = await fetch(`${sandbox.server.url}/sessions/${id}/files?path=data/in/blob.bin`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(bytes);

    const listed = await sandbox.client.listFiles(id, "data/in");
    expect(listed.status).toBe(200);
    expect((listed.body as any).files).toEqual([
      expect.objectContaining({ path: "data/in/blob.bin", size_bytes: 5000, type: "file" }),
    ]);
  });

  it("derives the path from the file name when none is given, and types downloads", async () => {
    const id = await newSession(sandbox.client);
    const put = await sandbox.client.putFile(id, "a,b\n1,2\n", { filename: "table.csv" });
    expect(put.body).toEqual({ path: "table.csv", size_bytes: 8 });
    const got = await sandbox.client.getFile(id, "table.csv");
    expect(got.text).toBe("a,b\n1,2\n");
    expect(got.headers.get("content-type")).toMatch(/^text\/csv/);
    const code = await sandbox.client.run(id, "code_execution", {
      code: "print(open('table.csv').read().split()[1])",
    });
    expect(code.stdout).toBe("1,2\n");
  });

  it("stores an upload into an existing directory under the file's name", async () => {
    const id = await newSession(sandbox.client);
    await sandbox.client.run(id, "bash_code_execution", { command: "mkdir inbox" });
    const put = await sandbox.client.putFile(id, "x", { path: "inbox", filename: "note.txt" });
    expect(put.body).toEqual({ path: "inbox/note.txt", size_bytes: 1 });
  });

  it("lists the root by default, directories included, and recursively on request", async () => {
    const id = await newSession(sandbox.client);
    await sandbox.client.run(id, "bash_code_execution", {
      command: "mkdir -p out/deep && echo 1 > out/deep/r.txt && echo hello > top.txt && echo s > .hidden",
    });
    const top = (await sandbox.client.listFiles(id)).body as any;
    expect(top.files.map((f: any) => [f.path, f.type])).toEqual([
      [".hidden", "file"],
      ["out", "directory"],
      ["top.txt", "file"],
    ]);
    expect(top.files[2]).toMatchObject({ size_bytes: 6, mime_type: "text/plain" });
    expect(top.files[2].modified_at).toBeGreaterThan(1_700_000_000);
    const all = (await sandbox.client.listFiles(id, ".", "&recursive=true")).body as any;
    expect(all.files.map((f: any) => f.path)).toEqual([
      ".hidden",
      "out",
      "top.txt",
      "out/deep",
      "out/deep/r.txt",
    ]);
  });

  it("answers 404 for a missing file or directory and 400 for a directory read as a file", async () => {
    const id = await newSession(sandbox.client);
    await sandbox.client.run(id, "bash_code_execution", { command: "mkdir d && touch f" });
    expect((await sandbox.client.getFile(id, "nope.txt")).status).toBe(404);
    expect((await sandbox.client.listFiles(id, "nope")).status).toBe(404);
    expect((await sandbox.client.listFiles(id, "f")).status).toBe(404);
    const dir = await sandbox.client.getFile(id, "d");
    expect(dir.status).toBe(400);
    expect((dir.body as any).detail.code).toBe("file.is_directory");
    expect((await sandbox.client.request("GET", `/sessions/${id}/files`)).status).toBe(422);
  });

  it("refuses a file over the cap with 413 and leaves nothing behind", async () => {
    const id = await newSession(sandbox.client);
    const tooBig = new Uint8Array(64 * 1024 + 1);
    const refused = await sandbox.client.putFile(id, tooBig, { path: "big.bin" });
    expect(refused.status).toBe(413);
    expect((refused.body as any).detail.code).toBe("file.too_large");
    expect(await readdir(workspaceOf(id))).toEqual([]);
    expect(await readdir(path.join(sandbox.root, id, "uploads"))).toEqual([]);
    const exact = await sandbox.client.putFile(id, new Uint8Array(64 * 1024), { path: "fits.bin" });
    expect(exact.status).toBe(201);
  });

  it("refuses a declared Content-Length far over the cap before reading", async () => {
    const id = await newSession(sandbox.client);
    const res = await sandbox.client.request("POST", `/sessions/${id}/files`, {
      // fetch declares the length itself (1): a body that short is no multipart at all.
      body: "x",
      headers: { "content-type": "multipart/form-data; boundary=b" },
    });
    expect(res.status).toBe(422);
    const big = await fetch(`${sandbox.server.url}/sessions/${id}/files`, {
      method: "POST",
      headers: { "content-type": "multipart/form-data; boundary=b" },
      body: new Uint8Array(1024 * 1024),
    });
    expect(big.status).toBe(413);
  });

  it("refuses an upload without a file part or with the wrong content type", async () => {
    const id = await newSession(sandbox.client);
    const form = new FormData();
    form.set("path", "x.txt");
    expect((await sandbox.client.request("POST", `/sessions/${id}/files`, { body: form })).status).toBe(422);
    const typed = await sandbox.client.request("POST", `/sessions/${id}/files`, {
      body: "raw",
      headers: { "content-type": "application/octet-stream" },
    });
    expect(typed.status).toBe(415);
  });

  // Found by the gateway fuzz suite: an upload refused before its body was read left the rest
  // unread, so the server closed the keep-alive connection under the gateway's next call,
  // which failed (502) and ended the session.
  it("drains an upload it refuses unread, so the connection serves the next call", async () => {
    const id = await newSession(sandbox.client);
    const pool = new Pool(sandbox.server.url, { connections: 1, pipelining: 1 });
    try {
      const big = Buffer.alloc(512 * 1024, 0x61);
      for (const type of ["application/octet-stream", "multipart/form-data"]) {
        const refused = await pool.request({
          method: "POST",
          path: `/sessions/${id}/files`,
          headers: { "content-type": type },
          body: Readable.from([big.subarray(0, 256 * 1024), big.subarray(256 * 1024)]),
        });
        expect(refused.statusCode).toBeGreaterThanOrEqual(400);
        await refused.body.text();
        const next = await pool.request({ method: "GET", path: `/sessions/${id}/files/list` });
        expect({ type, status: next.statusCode }).toEqual({ type, status: 200 });
        await next.body.text();
      }
    } finally {
      await pool.close();
    }
  });

  // Found by the gateway fuzz suite: the file system's refusals were 500 server.internal.
  it("refuses a path the file system cannot hold with 400 path.invalid, and leaves nothing behind", async () => {
    const id = await newSession(sandbox.client);
    expect((await sandbox.client.putFile(id, "x", { path: "file.txt" })).status).toBe(201);
    for (const bad of [
      "n".repeat(300),
      `dir/${"n".repeat(300)}/x`,
      `${"a/".repeat(2100)}b`,
      "file.txt/under-a-file",
    ]) {
      const answer = await sandbox.client.putFile(id, "x", { path: bad });
      expect({ bad: bad.slice(0, 20), status: answer.status, body: answer.body }).toMatchObject({
        status: 400,
        body: { detail: { code: "path.invalid" } },
      });
    }
    const long = await sandbox.client.putFile(id, "x", { filename: "f".repeat(300) });
    expect(long.status).toBe(400);
    expect(await readdir(path.join(sandbox.root, id, "uploads"))).toEqual([]);
  });
});

describe("confinement", () => {
  const escapes = [
    "../escape.txt",
    "/etc/passwd",
    "a/../../escape.txt",
    "..",
    "..\\escape.txt",
    "a\u0000b",
    "%2e%2e/x",
  ];

  it.each(escapes.filter((p) => p !== "%2e%2e/x"))("refuses %j on every file route with 403", async (bad) => {
    const id = await newSession(sandbox.client);
    for (const answer of [
      await sandbox.client.getFile(id, bad),
      await sandbox.client.listFiles(id, bad),
      await sandbox.client.putFile(id, "pwned", { path: bad }),
    ]) {
      expect(answer.status).toBe(403);
      expect((answer.body as any).detail.code).toBe("path.outside_workspace");
    }
    expect(await readdir(path.join(sandbox.root, id))).toEqual(["uploads", "workspace"]);
    expect(await readdir(path.join(sandbox.root, id, "uploads"))).toEqual([]);
  });

  it("treats a doubly encoded dot-dot as a literal name, not a way out", async () => {
    const id = await newSession(sandbox.client);
    const res = await fetch(`${sandbox.server.url}/sessions/${id}/files?path=%252e%252e%252fescape`);
    expect(res.status).toBe(404);
  });

  it("refuses symlinks that lead outside, for reads, listings and writes", async () => {
    const id = await newSession(sandbox.client);
    const outside = path.join(sandbox.root, "outside");
    await writeFile(path.join(sandbox.root, "secret.txt"), "secret");
    const ws = workspaceOf(id);
    await symlink(path.join(sandbox.root, "secret.txt"), path.join(ws, "link.txt"));
    await symlink(sandbox.root, path.join(ws, "rootdir"));
    await symlink(outside, path.join(ws, "dangling"));
    expect((await sandbox.client.getFile(id, "link.txt")).status).toBe(403);
    expect((await sandbox.client.getFile(id, "rootdir/secret.txt")).status).toBe(403);
    expect((await sandbox.client.listFiles(id, "rootdir")).status).toBe(403);
    expect((await sandbox.client.putFile(id, "x", { path: "rootdir/planted.txt" })).status).toBe(403);
    expect((await sandbox.client.putFile(id, "x", { path: "dangling/planted.txt" })).status).toBe(403);
    const listed = (await sandbox.client.listFiles(id)).body as any;
    expect(listed.files).toEqual([]);
    expect(await readdir(sandbox.root)).not.toContain("planted.txt");
  });

  it("follows symlinks that stay inside the workspace", async () => {
    const id = await newSession(sandbox.client);
    await sandbox.client.run(id, "bash_code_execution", {
      command: "echo in > real.txt && ln -s real.txt alias.txt",
    });
    const got = await sandbox.client.getFile(id, "alias.txt");
    expect(got.status).toBe(200);
    expect(got.text).toBe("in\n");
  });

  it("keeps one session's files out of another's reach", async () => {
    const a = await newSession(sandbox.client);
    const b = await newSession(sandbox.client);
    await sandbox.client.putFile(a, "mine", { path: "private.txt" });
    expect((await sandbox.client.getFile(b, "private.txt")).status).toBe(404);
    expect((await sandbox.client.getFile(b, `../../${a}/workspace/private.txt`)).status).toBe(403);
  });
});
