/**
 * A fake sandbox server on loopback that answers every call with far more than any sound
 * sandbox would: Execute with a 200 of `answerBytes` (default 100 MB), a session whose
 * inner id starts with "error" with a 500 of that size, one starting with "declared" with
 * a Content-Length that says so, one starting with "trickle" with a byte a second (the
 * call's answer never ends), one starting with "stream" with an event stream whose first
 * event is that size, and GetFile with a download of that size. Everything is
 * written with backpressure, and `written` counts what actually left, so a test can tell a
 * gateway that stopped reading from one that buffered it all.
 */
import { once } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

const CHUNK = 64 * 1024;

export interface HostileSandbox {
  url: string;
  /** Bytes of answer bodies written so far, all answers together. */
  written(): number;
  close(): Promise<void>;
}

export async function startHostileSandbox(answerBytes = 100 * 1024 * 1024): Promise<HostileSandbox> {
  let written = 0;
  const pump = (response: ServerResponse) => {
    let left = answerBytes;
    const next = () => {
      while (left > 0 && !response.destroyed) {
        const size = Math.min(CHUNK, left);
        left -= size;
        written += size;
        if (!response.write(Buffer.alloc(size, 0x20))) return void response.once("drain", next);
      }
      response.end();
    };
    next();
  };
  const server = createServer((request, response) => {
    request.resume();
    const url = request.url ?? "";
    if (/^\/sessions\/trickle/.test(url)) {
      response.writeHead(200, { "content-type": "application/json" });
      const timer = setInterval(() => {
        written += 1;
        response.write(" ");
      }, 1_000);
      response.on("close", () => clearInterval(timer));
      return;
    }
    if (/^\/sessions\/stream/.test(url)) {
      // A streamed Execute whose first output event never ends.
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write('event: stdout\ndata: {"text":"');
    } else if (/^\/sessions\/declared/.test(url)) {
      response.writeHead(200, { "content-type": "application/json", "content-length": String(answerBytes) });
    } else if (/^\/sessions\/error/.test(url)) {
      response.writeHead(500, { "content-type": "application/json" });
    } else if (request.method === "GET" && /\/files\?/.test(url)) {
      response.writeHead(200, {
        "content-type": "application/octet-stream",
        "content-length": String(answerBytes),
      });
    } else {
      response.writeHead(200, { "content-type": "application/json" });
    }
    pump(response);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    written: () => written,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
