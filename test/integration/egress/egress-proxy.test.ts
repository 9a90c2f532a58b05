/**
 * The egress proxy on a real Unix socket, against real listeners on 127.0.0.1 only. Every
 * other address in this file is only ever handed to the rules, which refuse it before
 * anything connects (the injected resolver maps test names to loopback addresses).
 */
import { once } from "node:events";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, request, type Server } from "node:http";
import net, { type AddressInfo, connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EgressProxy } from "../../../src/egress/egress-proxy.js";
import type { EgressProxySettings } from "../../../src/egress/egress-proxy-options.js";
import type { EgressGrant } from "../../../src/egress/egress-rules.js";

const names: Record<string, string[]> = {
  "allowed.test": ["127.0.0.1"],
  "other.test": ["127.0.0.1"],
  // One checked address is fine, the other (loopback ::1, also refused by default) is not.
  "rebind.test": ["127.0.0.1", "::1"],
};

const resolve = async (host: string): Promise<string[]> => {
  const addresses = names[host];
  if (!addresses) throw Object.assign(new Error(`no such name ${host}`), { code: "ENOTFOUND" });
  return addresses;
};

const settings: EgressProxySettings = {
  denyCidrs: [],
  maxTunnelsPerSandbox: 2,
  connectTimeoutMs: 2_000,
  idleTimeoutMs: 5_000,
};

let dir: string;
let target: Server;
let targetPort: number;
const seen: { url: string; headers: IncomingHttpHeaders }[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "sandpool-egress-"));
  target = createServer((req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    res.setHeader("x-upstream", "yes");
    res.end(`hello from ${req.url}`);
  });
  target.listen(0, "127.0.0.1");
  await once(target, "listening");
  targetPort = (target.address() as AddressInfo).port;
});

afterAll(async () => {
  target.closeAllConnections();
  await new Promise((done) => target.close(done));
  await rm(dir, { recursive: true, force: true });
});

let proxy: EgressProxy;
let socketPath: string;
let bytes: [number, number][];
let sequence = 0;

async function openProxy(
  grant: EgressGrant | undefined | (() => Promise<EgressGrant | undefined>),
  extra = {},
) {
  bytes = [];
  proxy = new EgressProxy({
    settings: { ...settings, ...extra },
    log: pino({ level: "silent" }),
    resolve,
    onBytes: (_id, sent, received) => bytes.push([sent, received]),
  });
  socketPath = path.join(dir, `egress-${++sequence}.sock`);
  await proxy.open("sb-1", socketPath, typeof grant === "function" ? grant : async () => grant);
}

afterEach(async () => {
  await proxy?.closeAll();
});

const loopbackGrant: EgressGrant = { allowCidrs: ["127.0.0.1/32"], allowHosts: [] };
const noExceptions: EgressGrant = { allowCidrs: [], allowHosts: [] };

interface ConnectAnswer {
  status: number;
  text: string;
  socket: Socket;
}

/** Sends CONNECT on a fresh connection to the proxy socket; the socket stays open on 200. */
async function connectThrough(authority: string): Promise<ConnectAnswer> {
  const socket = connect(socketPath);
  await once(socket, "connect");
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  // Not `for await`: leaving that loop would destroy the socket, and with it the tunnel.
  const text = await new Promise<string>((done) => {
    let received = "";
    const onData = (chunk: Buffer) => {
      received += chunk.toString();
      if (/^HTTP\/1\.1 200 /.test(received) && received.includes("\r\n\r\n")) {
        socket.off("data", onData);
        socket.pause();
        done(received);
      }
    };
    socket.on("data", onData);
    socket.once("close", () => done(received));
  });
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
  return { status, text: status === 200 ? "" : text.slice(text.indexOf("\r\n\r\n") + 4).trim(), socket };
}

/** A whole HTTP/1.1 exchange over an open tunnel. */
async function getOverTunnel(socket: Socket, requestPath: string): Promise<string> {
  socket.write(`GET ${requestPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

/** A plain-HTTP proxy request: the absolute URL as the request target. */
function getThroughProxy(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: IncomingHttpHeaders }> {
  return new Promise((done, fail) => {
    const req = request({ socketPath, path: url, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        done({
          status: res.statusCode ?? 0,
          text: Buffer.concat(chunks).toString().trim(),
          headers: res.headers,
        }),
      );
    });
    req.on("error", fail);
    req.end();
  });
}

describe("the socket", () => {
  it("is connectable by any user, and removed on close", async () => {
    await openProxy(noExceptions);
    expect((await stat(socketPath)).mode & 0o777).toBe(0o666);
    await proxy.close("sb-1");
    await expect(stat(socketPath)).rejects.toThrow(/ENOENT/);
    expect(await proxy.close("sb-1")).toBeUndefined();
  });

  it("refuses to open one sandbox twice", async () => {
    await openProxy(noExceptions);
    await expect(proxy.open("sb-1", path.join(dir, "again.sock"), async () => noExceptions)).rejects.toThrow(
      /open already/,
    );
  });
});

describe("without a grant", () => {
  it("refuses CONNECT and plain HTTP alike", async () => {
    await openProxy(undefined);
    const tunnel = await connectThrough(`127.0.0.1:${targetPort}`);
    expect(tunnel.status).toBe(403);
    expect(tunnel.text).toBe("sandpool egress: this sandbox has no egress grant");
    const plain = await getThroughProxy(`http://127.0.0.1:${targetPort}/x`);
    expect(plain.status).toBe(403);
    expect(plain.text).toBe("sandpool egress: this sandbox has no egress grant");
    expect(proxy.usage("sb-1")).toMatchObject({ refused: 2, connections: 0 });
  });

  it("a grant that cannot be read is a 503, not an open door", async () => {
    await openProxy(async () => {
      throw new Error("database down");
    });
    const tunnel = await connectThrough(`127.0.0.1:${targetPort}`);
    expect(tunnel.status).toBe(503);
  });
});

describe("loopback", () => {
  it("is refused by default, naming the range", async () => {
    await openProxy(noExceptions);
    const tunnel = await connectThrough(`127.0.0.1:${targetPort}`);
    expect(tunnel.status).toBe(403);
    expect(tunnel.text).toBe("sandpool egress: 127.0.0.1 is in the loopback range (127.0.0.0/8)");
    const plain = await getThroughProxy(`http://127.0.0.1:${targetPort}/x`);
    expect(plain.status).toBe(403);
    expect(plain.text).toContain("loopback");
    const v6 = await connectThrough(`[::1]:${targetPort}`);
    expect(v6.status).toBe(403);
    expect(v6.text).toContain("::1 is in the loopback address");
  });

  it("is reached through CONNECT once the grant allows 127.0.0.1/32", async () => {
    await openProxy(loopbackGrant);
    const tunnel = await connectThrough(`127.0.0.1:${targetPort}`);
    expect(tunnel.status).toBe(200);
    const answer = await getOverTunnel(tunnel.socket, "/through-tunnel");
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain("hello from /through-tunnel");
    const usage = proxy.usage("sb-1")!;
    expect(usage.connections).toBe(1);
    expect(usage.sentBytes).toBeGreaterThan(40);
    expect(usage.receivedBytes).toBeGreaterThan(answer.length - 1);
    expect(bytes.reduce((sum, [, received]) => sum + received, 0)).toBe(usage.receivedBytes);
  });

  it("is reached through plain HTTP, without hop-by-hop or Proxy-* headers", async () => {
    await openProxy(loopbackGrant);
    seen.length = 0;
    const answer = await getThroughProxy(`http://127.0.0.1:${targetPort}/plain?q=1`, {
      "proxy-authorization": "Basic c2VjcmV0",
      "proxy-connection": "keep-alive",
      connection: "x-private-hop",
      "x-private-hop": "drop me",
      "x-kept": "keep me",
    });
    expect(answer.status).toBe(200);
    expect(answer.text).toBe("hello from /plain?q=1");
    expect(answer.headers["x-upstream"]).toBe("yes");
    expect(seen).toHaveLength(1);
    const received = seen[0]!;
    expect(received.url).toBe("/plain?q=1");
    expect(received.headers.host).toBe(`127.0.0.1:${targetPort}`);
    expect(received.headers["x-kept"]).toBe("keep me");
    expect(received.headers["x-private-hop"]).toBeUndefined();
    expect(received.headers["proxy-authorization"]).toBeUndefined();
    expect(received.headers["proxy-connection"]).toBeUndefined();
    await expect.poll(() => proxy.usage("sb-1")!.receivedBytes).toBeGreaterThan(0);
  });

  it("only the granted address: 127.0.0.2 stays refused", async () => {
    await openProxy(loopbackGrant);
    const tunnel = await connectThrough(`127.0.0.2:${targetPort}`);
    expect(tunnel.status).toBe(403);
  });
});

describe("host names", () => {
  it("a name resolving to loopback is refused unless its address is allowed", async () => {
    await openProxy(noExceptions);
    const refused = await connectThrough(`allowed.test:${targetPort}`);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain("127.0.0.1 is in the loopback range");
    await proxy.closeAll();

    await openProxy(loopbackGrant);
    const tunnel = await connectThrough(`allowed.test:${targetPort}`);
    expect(tunnel.status).toBe(200);
    expect(await getOverTunnel(tunnel.socket, "/by-name")).toContain("hello from /by-name");
    const plain = await getThroughProxy(`http://allowed.test:${targetPort}/by-name-plain`);
    expect(plain.text).toBe("hello from /by-name-plain");
  });

  it("every resolved address must pass: one refused address refuses the name", async () => {
    await openProxy(loopbackGrant);
    const tunnel = await connectThrough(`rebind.test:${targetPort}`);
    expect(tunnel.status).toBe(403);
    expect(tunnel.text).toContain("::1");
    expect(proxy.usage("sb-1")!.connections).toBe(0);
  });

  it("allowHosts lets only matching names through", async () => {
    await openProxy({ allowCidrs: ["127.0.0.1/32"], allowHosts: ["allowed.test"] });
    expect((await connectThrough(`allowed.test:${targetPort}`)).status).toBe(200);
    const other = await connectThrough(`other.test:${targetPort}`);
    expect(other.status).toBe(403);
    expect(other.text).toBe("sandpool egress: host 'other.test' is not in this workspace's allowed hosts");
    // An address literal is not a host name of the list, though its address is allowed.
    expect((await connectThrough(`127.0.0.1:${targetPort}`)).status).toBe(403);
    const plain = await getThroughProxy(`http://other.test:${targetPort}/`);
    expect(plain.status).toBe(403);
  });

  it("a wildcard entry matches names below it", async () => {
    await openProxy({ allowCidrs: ["127.0.0.1/32"], allowHosts: ["*.test"] });
    expect((await connectThrough(`other.test:${targetPort}`)).status).toBe(200);
  });

  it("a name that does not resolve is a 502 naming it", async () => {
    await openProxy(loopbackGrant);
    const answer = await connectThrough(`missing.test:${targetPort}`);
    expect(answer.status).toBe(502);
    expect(answer.text).toBe("sandpool egress: cannot resolve 'missing.test' (ENOTFOUND)");
  });
});

describe("bounds and malformed requests", () => {
  it("refuses connections beyond maxTunnelsPerSandbox, and frees a slot when one closes", async () => {
    await openProxy(loopbackGrant);
    const first = await connectThrough(`127.0.0.1:${targetPort}`);
    const second = await connectThrough(`127.0.0.1:${targetPort}`);
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await connectThrough(`127.0.0.1:${targetPort}`);
    expect(third.status).toBe(429);
    expect(third.text).toContain("2 connections are open already");
    first.socket.destroy();
    await expect
      .poll(async () => {
        const next = await connectThrough(`127.0.0.1:${targetPort}`);
        next.socket.destroy();
        return next.status;
      })
      .toBe(200);
    second.socket.destroy();
  });

  it("close ends open tunnels", async () => {
    await openProxy(loopbackGrant);
    const tunnel = await connectThrough(`127.0.0.1:${targetPort}`);
    const closed = once(tunnel.socket, "close");
    const usage = await proxy.close("sb-1");
    await closed;
    expect(usage?.connections).toBe(1);
  });

  it("closes a tunnel idle for idleTimeoutMs, and frees its slot", async () => {
    await openProxy(loopbackGrant, { idleTimeoutMs: 300 });
    const tunnel = await connectThrough(`127.0.0.1:${targetPort}`);
    expect(tunnel.status).toBe(200);
    const started = Date.now();
    await once(tunnel.socket, "close");
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    await expect.poll(() => proxy.usage("sb-1")!.connections).toBe(1);
    const again = await connectThrough(`127.0.0.1:${targetPort}`);
    expect(again.status).toBe(200);
    again.socket.destroy();
  });

  it("opens with an idle timeout longer than Node's default request timeout", async () => {
    await openProxy(loopbackGrant, { idleTimeoutMs: 3_600_000 });
    const answer = await getThroughProxy(`http://127.0.0.1:${targetPort}/long-idle`);
    expect(answer.status).toBe(200);
  });

  it("allowPorts refuses other ports", async () => {
    await openProxy(loopbackGrant, { allowPorts: [443] });
    const answer = await connectThrough(`127.0.0.1:${targetPort}`);
    expect(answer.status).toBe(403);
    expect(answer.text).toContain(`port ${targetPort} is not allowed (allowed: 443)`);
  });

  it("answers 400 to a malformed CONNECT target, an origin-form request and an https:// URL", async () => {
    await openProxy(loopbackGrant);
    expect((await connectThrough("127.0.0.1")).status).toBe(400);
    expect((await connectThrough("127.0.0.1:0")).status).toBe(400);
    expect((await connectThrough("bad_host!:80")).status).toBe(400);
    expect((await getThroughProxy("/just-a-path")).status).toBe(400);
    const https = await getThroughProxy(`https://127.0.0.1:${targetPort}/`);
    expect(https.status).toBe(400);
    expect(https.text).toContain("CONNECT");
  });

  it("a refused upstream connection is a 502", async () => {
    // A port on 127.0.0.1 that was just free: nothing listens there.
    const probe = createServer();
    probe.listen(0, "127.0.0.1");
    await once(probe, "listening");
    const freePort = (probe.address() as AddressInfo).port;
    await new Promise((done) => probe.close(done));
    await openProxy(loopbackGrant);
    const answer = await connectThrough(`127.0.0.1:${freePort}`);
    expect(answer.status).toBe(502);
    expect(answer.text).toContain("ECONNREFUSED");
  });
});

describe("a hostile upstream", () => {
  it("answering a status Node cannot send on (099) is a 502, and the proxy lives on", async () => {
    // A raw server on loopback that answers a status line the client parses but no server may write.
    const hostile = net.createServer((socket) => {
      socket.once("data", () => socket.end("HTTP/1.1 099 Odd\r\ncontent-length: 0\r\n\r\n"));
      socket.on("error", () => undefined);
    });
    hostile.listen(0, "127.0.0.1");
    await once(hostile, "listening");
    const port = (hostile.address() as AddressInfo).port;
    try {
      await openProxy(loopbackGrant);
      const answer = await getThroughProxy(`http://127.0.0.1:${port}/`);
      expect(answer.status).toBe(502);
      expect(answer.text).toContain("answered status 99");
      // Still serving: the process did not die of it.
      expect((await getThroughProxy(`http://127.0.0.1:${targetPort}/after`)).status).toBe(200);
    } finally {
      await new Promise((done) => hostile.close(done));
    }
  });
});
