import { once } from "node:events";
import { connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, type RunningServer } from "../../../src/http/common/listen.js";
import { readJsonBody } from "../../../src/http/common/read-json-body.js";

/** Echoes the parsed body. */
function echoApp(): Hono {
  const app = new Hono();
  app.post("/echo", async (c) => {
    const body = await readJsonBody(c);
    return c.json({ body });
  });
  return app;
}

/** Sends raw HTTP/1.1 on one keep-alive connection, in the given pieces, and returns what came back. */
async function exchange(port: number, pieces: string[], answers: number): Promise<string> {
  const socket = connect(port, "127.0.0.1");
  await once(socket, "connect");
  let received = "";
  socket.on("data", (chunk) => {
    received += chunk.toString("utf8");
  });
  for (const piece of pieces) {
    socket.write(piece);
    await sleep(30);
  }
  const deadline = Date.now() + 5_000;
  while ((received.match(/HTTP\/1\.1 /g)?.length ?? 0) < answers || !received.trimEnd().endsWith("}")) {
    if (Date.now() > deadline) break;
    await sleep(10);
  }
  socket.destroy();
  return received;
}

function post(body: string, extra = ""): string {
  return `POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
}

describe("readJsonBody", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await listen(echoApp(), { host: "127.0.0.1", port: 0 });
  });
  afterAll(() => server.close());

  it("takes a body that came whole with its headers, and the connection serves the next request", async () => {
    const received = await exchange(server.port, [post('{"a":1}') + post('{"b":"two"}')], 2);
    expect(received).toContain('{"body":{"a":1}}');
    expect(received).toContain('{"body":{"b":"two"}}');
  });

  it("waits for a body that arrives after its headers, in pieces", async () => {
    const whole = post('{"late":[1,2,3]}');
    const split = whole.indexOf("\r\n\r\n") + 4;
    const received = await exchange(
      server.port,
      [whole.slice(0, split), whole.slice(split, split + 5), whole.slice(split + 5)],
      1,
    );
    expect(received).toContain('{"body":{"late":[1,2,3]}}');
  });

  it("reads a chunked body", async () => {
    const body = '{"chunked":true}';
    const request = `POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const received = await exchange(server.port, [request], 1);
    expect(received).toContain('{"body":{"chunked":true}}');
  });

  it("takes multi-byte text whole", async () => {
    const received = await exchange(server.port, [post('{"s":"héllo ☃"}')], 1);
    expect(received).toContain('{"body":{"s":"héllo ☃"}}');
  });
});
