/**
 * An upload refused before its last byte (over the file cap, sent chunked so no length gives
 * it away) still gets its 413, and the keep-alive connection it came on stays usable: the
 * gateway reads the rest of the body and throws it away instead of closing a connection the
 * client was told it could reuse. Both failures were seen as a flake in the fuzz suite: the
 * refused upload itself ending in ECONNRESET, or the next request on the same connection
 * in "socket hang up".
 */
import { Agent, request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertContractResponse } from "../../support/contract.js";
import { startTestGateway, TEST_IMAGE, type TestGateway } from "../../support/gateway-harness.js";

const WORKSPACE = "team-uploads";
const MAX_FILE_BYTES = 64 * 1024;
const ROUNDS = Number(process.env.ROUNDS ?? 25);

let harness: TestGateway;
let token: string;
let sessionId: string;
/** One socket: every request after a refused upload goes on the connection it used. */
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

beforeAll(async () => {
  harness = await startTestGateway({
    policy: { allowedImages: [TEST_IMAGE], defaultImage: TEST_IMAGE, maxFileBytes: MAX_FILE_BYTES },
  });
  token = await harness.token(WORKSPACE);
  const created = await (await harness.client(WORKSPACE)).createSession();
  sessionId = (created.body as { session_id: string }).session_id;
});
afterAll(async () => {
  agent.destroy();
  await harness?.close();
});

interface Sent {
  status: number;
  json: unknown;
  socketReused: boolean;
}

/** A multipart upload of `size` bytes, written in 16 KiB chunks with no Content-Length. */
function upload(size: number, name: string, contentType?: string): Promise<Sent> {
  const boundary = `b${Math.random().toString(16).slice(2)}`;
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="path"\r\n\r\n${name}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n` +
        "Content-Type: application/octet-stream\r\n\r\n",
    ),
    Buffer.alloc(size, 0x61),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const url = new URL(harness.url);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: url.hostname,
        port: url.port,
        method: "POST",
        path: `/sessions/${sessionId}/files`,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": contentType ?? `multipart/form-data; boundary=${boundary}`,
        },
        agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            json: JSON.parse(Buffer.concat(chunks).toString("utf8")),
            socketReused: outgoing.reusedSocket,
          }),
        );
        res.on("error", reject);
      },
    );
    outgoing.on("error", reject);
    for (let at = 0; at < body.length; at += 16 * 1024) outgoing.write(body.subarray(at, at + 16 * 1024));
    outgoing.end();
  });
}

describe("an upload refused before its last byte", () => {
  it("answers 413 file.too_large every time, and the next request on the same connection is served", async () => {
    let reused = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const refused = await upload((1 + (round % 4) * 20) * MAX_FILE_BYTES + 1, `big-${round}.bin`);
      expect(refused.status).toBe(413);
      expect((refused.json as { detail: { code: string } }).detail.code).toBe("file.too_large");
      assertContractResponse("PutFile", 413, refused.json);

      const stored = await upload(11, `small-${round}.txt`);
      expect(stored.status).toBe(201);
      assertContractResponse("PutFile", 201, stored.json);
      if (stored.socketReused) reused++;
    }
    // The connection survived the refusals: the small uploads went on it, not on new ones.
    expect(reused).toBe(ROUNDS);
  });

  it.each([
    ["no boundary", "multipart/form-data", "request.malformed", 422],
    ["not multipart", "text/plain", "request.bad_content_type", 415],
  ])(
    "refuses a body at its first byte (%s), and the connection stays usable",
    async (_, type, code, status) => {
      let reused = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const refused = await upload((1 + (round % 4) * 20) * MAX_FILE_BYTES, `bad-${round}.bin`, type);
        expect((refused.json as { detail: { code: string } }).detail.code).toBe(code);
        expect(refused.status).toBe(status);
        assertContractResponse("PutFile", status, refused.json);
        const stored = await upload(11, `after-${round}.txt`);
        expect(stored.status).toBe(201);
        if (stored.socketReused) reused++;
      }
      expect(reused).toBe(ROUNDS);
    },
  );
});
