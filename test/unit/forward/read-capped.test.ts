import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { readCapped, takeIfBuffered } from "../../../src/forward/read-capped.js";
import { SandboxClient } from "../../../src/forward/sandbox-client.js";

const MIB = 1024 * 1024;
const CHUNK = 64 * 1024;

/** A stream of `total` bytes that counts how many it was asked for. */
function endlessStream(total: number): { stream: Readable; pulled: () => number } {
  let produced = 0;
  const stream = new Readable({
    read() {
      if (produced >= total) return void this.push(null);
      const size = Math.min(CHUNK, total - produced);
      produced += size;
      this.push(Buffer.alloc(size, 0x61));
    },
  });
  return { stream, pulled: () => produced };
}

describe("readCapped", () => {
  it("stops a stream that errors when destroyed (as undici's does) without an uncaught error", async () => {
    const { stream } = endlessStream(100 * MIB);
    stream._destroy = (_error, callback) => callback(new Error("aborted"));
    const uncaught: unknown[] = [];
    const hear = (error: unknown) => uncaught.push(error);
    process.on("uncaughtException", hear);
    try {
      expect(await readCapped(stream, MIB)).toEqual({ bytes: Buffer.alloc(0), overflowed: true });
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(uncaught).toEqual([]);
    } finally {
      process.off("uncaughtException", hear);
    }
  });

  it("stops a 100 MB stream at the cap and destroys it", async () => {
    const { stream, pulled } = endlessStream(100 * MIB);
    const read = await readCapped(stream, MIB);
    expect(read).toEqual({ bytes: Buffer.alloc(0), overflowed: true });
    expect(stream.destroyed).toBe(true);
    // What was read ahead is bounded by the cap plus the stream's own buffering.
    expect(pulled()).toBeLessThan(MIB + 4 * CHUNK);
  });

  it("returns a body within the cap whole", async () => {
    const read = await readCapped(Readable.from([Buffer.from("ab"), Buffer.from("cd")]), 4);
    expect(read).toEqual({ bytes: Buffer.from("abcd"), overflowed: false });
  });

  it("fails, rather than waits forever, when the stream is destroyed before its end", async () => {
    const stream = new Readable({ read() {} });
    stream.push(Buffer.from("part of an answer"));
    const read = readCapped(stream, MIB);
    setTimeout(() => stream.destroy(), 10);
    await expect(read).rejects.toMatchObject({ code: "ERR_STREAM_PREMATURE_CLOSE" });
  });

  it("fails with the stream's own error", async () => {
    const stream = new Readable({ read() {} });
    stream.push(Buffer.from("part of an answer"));
    const read = readCapped(stream, MIB);
    setTimeout(() => stream.destroy(new Error("cut")), 10);
    await expect(read).rejects.toThrow("cut");
  });

  it("counts the bytes that arrive, one past the cap overflows", async () => {
    const read = await readCapped(Readable.from([Buffer.from("abc"), Buffer.from("de")]), 4);
    expect(read.overflowed).toBe(true);
  });
});

describe("takeIfBuffered", () => {
  it("takes a body whose declared bytes are all buffered, chunks joined, and leaves it to end", async () => {
    const stream = new Readable({ read() {} });
    stream.push(Buffer.from("ab"));
    stream.push(Buffer.from("cd"));
    stream.push(null);
    expect(takeIfBuffered(stream, 4)).toEqual(Buffer.from("abcd"));
    await once(stream, "end");
  });

  it("leaves a body alone while bytes are still to come", async () => {
    const stream = new Readable({ read() {} });
    stream.push(Buffer.from("ab"));
    expect(takeIfBuffered(stream, 4)).toBeUndefined();
    stream.push(Buffer.from("cd"));
    stream.push(null);
    expect(await readCapped(stream, 4)).toEqual({ bytes: Buffer.from("abcd"), overflowed: false });
  });

  it("takes an empty declared body as empty bytes", () => {
    const stream = new Readable({ read() {} });
    stream.push(null);
    expect(takeIfBuffered(stream, 0)).toEqual(Buffer.alloc(0));
  });

  it("leaves no error of a taken body unheard", async () => {
    const stream = new Readable({ read() {} });
    stream.push(Buffer.from("ab"));
    const uncaught: unknown[] = [];
    const hear = (error: unknown) => uncaught.push(error);
    process.on("uncaughtException", hear);
    try {
      expect(takeIfBuffered(stream, 2)).toEqual(Buffer.from("ab"));
      stream.destroy(new Error("connection lost after the answer"));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(uncaught).toEqual([]);
    } finally {
      process.off("uncaughtException", hear);
    }
  });

  it("finds a small answer from a real server whole when its headers arrive", async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/json", "content-length": "11" });
      response.end('{"ok":true}');
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const client = new SandboxClient();
    try {
      for (let i = 0; i < 3; i++) {
        const answer = await client.send(`http://127.0.0.1:${port}`, {
          method: "GET",
          path: "/",
          timeoutMs: 5_000,
        });
        expect(takeIfBuffered(answer.body, 11)?.toString()).toBe('{"ok":true}');
      }
    } finally {
      await client.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("SandboxClient.json against a sandbox that answers without end", () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("is sandbox.bad_answer after the cap, and the connection is cut, whatever Content-Length declares", async () => {
    let written = 0;
    let closed: () => void = () => {};
    const connectionClosed = new Promise<void>((resolve) => {
      closed = resolve;
    });
    server = createServer((_request, response) => {
      // A declared size is no permission: the reader goes by the bytes that arrive.
      response.writeHead(201, { "content-type": "application/json", "content-length": String(100 * MIB) });
      const pump = () => {
        while (written < 100 * MIB) {
          written += CHUNK;
          if (!response.write(Buffer.alloc(CHUNK, 0x20))) return void response.once("drain", pump);
        }
        response.end();
      };
      response.on("close", closed);
      pump();
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const client = new SandboxClient();
    try {
      await expect(
        client.json(`http://127.0.0.1:${port}`, { method: "POST", path: "/sessions", timeoutMs: 5_000 }),
      ).rejects.toMatchObject({ code: "sandbox.bad_answer" });
      await connectionClosed;
      expect(written).toBeLessThan(20 * MIB);
    } finally {
      await client.close();
    }
  });
});
