/**
 * listen()'s write-stall guard on a real socket: a client that stops reading an answer larger
 * than the kernel's buffers is cut off once nothing has moved for the stall timeout, and a
 * client that reads, however slowly, or waits long for an answer, is not.
 */
import { connect } from "node:net";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, type RunningServer } from "../../../src/http/common/listen.js";

const STALL_MS = 500;
/** Far more than loopback's socket buffers take on either side. */
const BIG = Buffer.alloc(64 * 1024 * 1024, 120);

describe("a client that stops reading", () => {
  let server: RunningServer;

  beforeAll(async () => {
    const app = new Hono();
    app.get("/big", (c) => c.body(BIG as Uint8Array<ArrayBuffer>));
    app.get("/slow", async (c) => {
      await new Promise((resolve) => setTimeout(resolve, STALL_MS * 3));
      return c.text("late but fine");
    });
    server = await listen(app, { host: "127.0.0.1", port: 0, writeStallTimeoutMs: STALL_MS });
  });
  afterAll(() => server?.close());

  function open() {
    const socket = connect({ host: "127.0.0.1", port: server.port });
    socket.on("error", () => undefined);
    return socket;
  }

  it("is cut off once its answer has not moved for the stall timeout", async () => {
    const socket = open();
    socket.pause();
    socket.write("GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    // Long past the timeout, read what is left: the server gave up on the answer midway.
    await new Promise((resolve) => setTimeout(resolve, STALL_MS * 6));
    let received = 0;
    socket.on("data", (chunk: Buffer) => {
      received += chunk.length;
    });
    socket.resume();
    await new Promise((resolve) => socket.once("close", resolve));
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(BIG.length);
  });

  it("is not cut off while it waits for a slow answer, nor while it reads", async () => {
    const slow = await fetch(`${server.url}/slow`);
    expect(await slow.text()).toBe("late but fine");
    const big = await fetch(`${server.url}/big`);
    expect((await big.arrayBuffer()).byteLength).toBe(BIG.length);
  });
});
