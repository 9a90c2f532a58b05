/**
 * A client that drops a PutFile half-way (a gateway timing out, a tenant closing its socket)
 * must not take the sandbox server down: the upload is abandoned, nothing is left in the
 * workspace, and the next call is served.
 */

import { readdir } from "node:fs/promises";
import { connect } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newSession, startTestSandbox, type TestSandbox } from "../../support/sandbox-server.js";

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox({ maxUploadBytes: 1024 * 1024 });
});
afterAll(() => sandbox.close());

it("survives an upload whose connection is cut mid-body and serves the next call", async () => {
  const id = await newSession(sandbox.client);
  const { hostname, port } = new URL(sandbox.server.url);
  const boundary = "----sandpool-abort";
  const head = [
    `--${boundary}`,
    'Content-Disposition: form-data; name="file"; filename="half.bin"',
    "Content-Type: application/octet-stream",
    "",
    "",
  ].join("\r\n");
  await new Promise<void>((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        [
          `POST /sessions/${id}/files HTTP/1.1`,
          `Host: ${hostname}:${port}`,
          `Content-Type: multipart/form-data; boundary=${boundary}`,
          "Content-Length: 500000",
          "",
          "",
        ].join("\r\n"),
      );
      socket.write(head);
      socket.write(Buffer.alloc(64 * 1024, 7));
      // Let the server start writing the part, then cut the connection without ending the body.
      setTimeout(() => {
        socket.destroy();
        resolve();
      }, 200);
    });
    socket.on("error", reject);
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  const listed = await sandbox.client.listFiles(id);
  expect(listed.status).toBe(200);
  expect(await readdir(path.join(sandbox.root, id, "workspace"))).not.toContain("half.bin");
  const put = await sandbox.client.putFile(id, "whole", { path: "whole.txt" });
  expect(put.status).toBe(201);
});
