/**
 * Credentials added on the way out, against hostile sandboxes: real sockets, the proxy on a
 * Unix socket, upstreams that are local TLS servers on 127.0.0.1 with a CA of their own
 * (given to the proxy as its upstream CA). Every test name resolves to 127.0.0.1 through the
 * injected resolver; nothing else is contacted.
 */
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer as createHttpServer, type IncomingHttpHeaders, request, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { rootCertificates, type TLSSocket } from "node:tls";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EgressProxy } from "../../../src/egress/egress-proxy.js";
import type { EgressCredential, EgressGrant } from "../../../src/egress/egress-rules.js";
import { type DeploymentCa, generateDeploymentCa } from "../../../src/egress/tls/deployment-ca.js";
import { LeafCertificates } from "../../../src/egress/tls/leaf-certificates.js";
import { connectThrough, httpsThrough, tlsOverTunnel } from "../../support/egress-tls-client.js";

const VALUE = "Bearer sk-live-DO-NOT-LEAK-7f3a9c";
const NAMES = ["bound.test", "other.test", "rogue.test", "paths.test", "plain.test"];
const resolve = async (host: string) => {
  // As DNS does, a fully qualified name (trailing dot) is the same name.
  if (NAMES.includes(host.replace(/\.$/, ""))) return ["127.0.0.1"];
  throw Object.assign(new Error(`no such name ${host}`), { code: "ENOTFOUND" });
};

interface Seen {
  host: string | undefined;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
}

let dir: string;
let deploymentCa: DeploymentCa;
let upstreamCa: DeploymentCa;
let seen: Seen[];
let rogueSeen: Seen[];
const servers: Server[] = [];
let port: number;
let roguePort: number;
let plainPort: number;

async function listen(server: Server): Promise<number> {
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return (server.address() as AddressInfo).port;
}

/** An HTTPS server presenting, for whatever name is asked, a leaf of `ca`. */
function tlsServer(ca: DeploymentCa, into: () => Seen[]): Server {
  const leaves = new LeafCertificates(ca);
  return createHttpsServer(
    {
      SNICallback: (name, done) =>
        leaves.contextFor(name).then(
          (context) => done(null, context),
          (error) => done(error),
        ),
    },
    (req, res) => {
      into().push({
        host: req.headers.host,
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        rawHeaders: req.rawHeaders,
      });
      if (req.url === "/slow") {
        // Busy longer than the proxy's idle timeout, never idle that long.
        let left = 8;
        const tick = setInterval(() => {
          res.write(`chunk${left} `);
          if (--left === 0) {
            clearInterval(tick);
            res.end("done");
          }
        }, 150);
        return;
      }
      if (req.url === "/redirect") {
        res.writeHead(302, { location: `https://other.test:${port}/landed` });
        return res.end();
      }
      req.resume();
      res.end(`upstream ${req.method} ${req.url}`);
    },
  );
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "sandpool-inject-"));
  deploymentCa = await generateDeploymentCa("test");
  upstreamCa = await generateDeploymentCa("upstream");
  const rogueCa = await generateDeploymentCa("rogue");
  port = await listen(tlsServer(upstreamCa, () => seen));
  roguePort = await listen(tlsServer(rogueCa, () => rogueSeen));
  plainPort = await listen(
    createHttpServer((req, res) => {
      seen.push({
        host: req.headers.host,
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        rawHeaders: [],
      });
      res.end("plain");
    }),
  );
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  await rm(dir, { recursive: true, force: true });
});

const credential: EgressCredential = {
  secret: "api-token",
  hosts: ["bound.test", "rogue.test", "plain.test"],
  header: "Authorization",
  value: VALUE,
};
const constrained: EgressCredential = {
  secret: "paths-token",
  hosts: ["paths.test"],
  paths: ["/v1/"],
  methods: ["GET"],
  header: "X-Api-Key",
  value: VALUE,
};
const grant: EgressGrant = {
  allowCidrs: ["127.0.0.1/32"],
  allowHosts: [],
  credentials: [credential, constrained],
};

let proxy: EgressProxy;
let socketPath: string;
let logText: string;
let used: [string, string, string][];
let refusals: [string, string, string, number][];
let sequence = 0;

async function openProxy(
  options: {
    grant?: EgressGrant;
    /** The grant as the gateway answers it at each ask (the default: `grant`, always). */
    grantFor?: () => Promise<EgressGrant | undefined>;
    injection?: boolean;
    idleTimeoutMs?: number;
  } = {},
) {
  seen = [];
  rogueSeen = [];
  logText = "";
  used = [];
  refusals = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logText += chunk.toString();
      done();
    },
  });
  proxy = new EgressProxy({
    settings: {
      denyCidrs: [],
      maxTunnelsPerSandbox: 4,
      connectTimeoutMs: 2_000,
      idleTimeoutMs: options.idleTimeoutMs ?? 5_000,
    },
    log: pino({ level: "trace" }, sink),
    resolve,
    ...(options.injection === false
      ? {}
      : {
          injection: {
            leaves: new LeafCertificates(deploymentCa),
            upstreamCa: [...rootCertificates, upstreamCa.certPem],
          },
        }),
    onCredentialUsed: (...args) => used.push(args),
    onRefused: (...args) => refusals.push(args),
  });
  socketPath = path.join(dir, `p${++sequence}.sock`);
  const chosen = options.grant ?? grant;
  await proxy.open("sb-1", socketPath, options.grantFor ?? (async () => chosen));
}

afterEach(async () => {
  await proxy?.closeAll();
  // Whatever a test did, the value was never told to the sandbox's side nor logged.
  expect(logText).not.toContain(VALUE);
  expect(logText).not.toContain("sk-live");
});

const trustDeployment = () => [deploymentCa.certPem];

describe("a CONNECT to a host a credential is bound to", () => {
  it("is terminated with a leaf of the deployment CA, and the upstream gets the header", async () => {
    await openProxy();
    const answer = await httpsThrough(
      socketPath,
      { host: "bound.test", port, ca: trustDeployment() },
      { path: "/a?b=1" },
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toBe("upstream GET /a?b=1");
    expect(answer.peer.issuer.CN).toContain("sandpool egress CA (test)");
    expect(answer.peer.subjectaltname).toBe("DNS:bound.test");
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers.authorization).toBe(VALUE);
    expect(used).toEqual([["sb-1", "api-token", "bound.test"]]);
    const usage = proxy.usage("sb-1")!;
    expect(usage.connections).toBe(1);
    expect(usage.sentBytes).toBeGreaterThan(0);
    expect(usage.receivedBytes).toBeGreaterThan(0);
  });

  it("takes a fully qualified name (trailing dot) as the same host", async () => {
    await openProxy();
    const answer = await httpsThrough(
      socketPath,
      { host: "bound.test.", port, ca: trustDeployment() },
      { path: "/dot", headers: [["Host", "bound.test."]] },
    );
    expect(answer.status).toBe(200);
    expect(seen[0]!.headers.authorization).toBe(VALUE);
  });

  it("replaces a header of the same name the sandbox sent, never adds a second", async () => {
    await openProxy();
    const answer = await httpsThrough(
      socketPath,
      { host: "bound.test", port, ca: trustDeployment() },
      {
        path: "/",
        headers: [
          ["Host", "bound.test"],
          ["Authorization", "Bearer the-sandbox-own"],
          ["authorization", "Basic c2Vjb25k"],
        ],
      },
    );
    expect(answer.status).toBe(200);
    const sent = seen[0]!.rawHeaders
      .filter((_, i) => i % 2 === 0)
      .filter((n) => n.toLowerCase() === "authorization");
    expect(sent).toHaveLength(1);
    expect(seen[0]!.headers.authorization).toBe(VALUE);
  });

  it("answers 421 to a request for another Host inside the tunnel, and sends nothing upstream", async () => {
    await openProxy();
    const answer = await httpsThrough(
      socketPath,
      { host: "bound.test", port, ca: trustDeployment() },
      { path: "/", headers: [["Host", "other.test"]] },
    );
    expect(answer.status).toBe(421);
    expect(answer.body).not.toContain(VALUE);
    expect(seen).toEqual([]);
    expect(used).toEqual([]);
    expect(refusals.at(-1)?.[2]).toMatch(/Host/);
  });

  it("refuses a TLS ClientHello naming another host (SNI) than the CONNECT", async () => {
    await openProxy();
    const tunnel = await connectThrough(socketPath, `bound.test:${port}`);
    expect(tunnel.status).toBe(200);
    await expect(
      tlsOverTunnel(tunnel.socket, { ca: trustDeployment(), host: "other.test", servername: "other.test" }),
    ).rejects.toThrow();
    expect(seen).toEqual([]);
    expect(refusals.at(-1)?.[2]).toMatch(/server name 'other\.test'/);
  });

  it("offers only http/1.1: a client asking for h2 alone gets no h2", async () => {
    await openProxy();
    const tunnel = await connectThrough(socketPath, `bound.test:${port}`);
    const attempt = tlsOverTunnel(tunnel.socket, {
      ca: trustDeployment(),
      host: "bound.test",
      servername: "bound.test",
      alpn: ["h2", "http/1.1"],
    });
    const { secure } = await attempt;
    expect(secure.alpnProtocol).toBe("http/1.1");
    secure.destroy();
  });

  it("sends no credential to an upstream whose certificate no trusted CA signed (502)", async () => {
    await openProxy();
    const answer = await httpsThrough(
      socketPath,
      { host: "rogue.test", port: roguePort, ca: trustDeployment() },
      { path: "/" },
    );
    expect(answer.status).toBe(502);
    expect(answer.body).toMatch(/did not present a certificate this gateway trusts/);
    expect(answer.body).not.toContain(VALUE);
    expect(rogueSeen).toEqual([]);
    expect(used).toEqual([]);
  });

  it("honours the credential's methods and paths", async () => {
    await openProxy();
    const target = { host: "paths.test", port, ca: trustDeployment() };
    const cases: [string, string, boolean][] = [
      ["GET", "/v1/items?x=1", true],
      ["POST", "/v1/items", false],
      ["GET", "/v2/items", false],
      ["GET", "/v1/../admin", false],
      ["GET", "/v1/%2e%2e/admin", false],
      ["GET", "/v1//x", false],
    ];
    for (const [method, requestPath, expected] of cases) {
      seen = [];
      const answer = await httpsThrough(socketPath, target, { method, path: requestPath });
      expect(answer.status, `${method} ${requestPath}`).toBe(200);
      expect(seen[0]!.headers["x-api-key"], `${method} ${requestPath}`).toBe(expected ? VALUE : undefined);
    }
  });

  it("still applies the destination and address checks: an ungranted loopback is refused as before", async () => {
    await openProxy({ grant: { ...grant, allowCidrs: [] } });
    const tunnel = await connectThrough(socketPath, `bound.test:${port}`);
    expect(tunnel.status).toBe(403);
    expect(tunnel.text).toMatch(/loopback/);
    const ownSocket = await connectThrough(socketPath, `127.0.0.1:${port}`);
    expect(ownSocket.status).toBe(403);
    expect(seen).toEqual([]);
  });

  it("is refused (503), not tunnelled bare, when the gateway has no CA to terminate with", async () => {
    await openProxy({ injection: false });
    const tunnel = await connectThrough(socketPath, `bound.test:${port}`);
    expect(tunnel.status).toBe(503);
    expect(tunnel.text).not.toContain(VALUE);
  });
});

describe("a credential that cannot be sent safely", () => {
  it("is never sent: a value that would split the request, or a framing header, is a 502", async () => {
    for (const bad of [
      { ...credential, value: `${VALUE}\r\nX-Injected: 1` },
      { ...credential, header: "Host" },
      { ...credential, header: "Content-Length" },
    ]) {
      await openProxy({ grant: { ...grant, credentials: [bad] } });
      const answer = await httpsThrough(
        socketPath,
        { host: "bound.test", port, ca: trustDeployment() },
        { path: "/" },
      );
      expect(answer.status).toBe(502);
      expect(answer.body).toContain("secret 'api-token'");
      expect(answer.body).not.toContain(VALUE);
      expect(seen).toEqual([]);
      expect(logText).not.toContain("sk-live");
      await proxy.closeAll();
    }
  });
});

describe("what gets no credential", () => {
  it("an unbound host: a plain tunnel, the upstream's own certificate, no header", async () => {
    await openProxy();
    const answer = await httpsThrough(
      socketPath,
      { host: "other.test", port, ca: [upstreamCa.certPem] },
      { path: "/", headers: [["Host", "other.test"]] },
    );
    expect(answer.status).toBe(200);
    expect(answer.peer.issuer.CN).toContain("sandpool egress CA (upstream)");
    expect(seen[0]!.headers.authorization).toBeUndefined();
    expect(used).toEqual([]);
  });

  it("the unbound host a bound one redirects to", async () => {
    await openProxy();
    const first = await httpsThrough(
      socketPath,
      { host: "bound.test", port, ca: trustDeployment() },
      { path: "/redirect" },
    );
    expect(first.status).toBe(302);
    const next = new URL(first.headers.location!);
    const second = await httpsThrough(
      socketPath,
      { host: next.hostname, port: Number(next.port), ca: [upstreamCa.certPem] },
      { path: next.pathname, headers: [["Host", next.host]] },
    );
    expect(second.status).toBe(200);
    expect(seen.map((s) => [s.url, s.headers.authorization])).toEqual([
      ["/redirect", VALUE],
      ["/landed", undefined],
    ]);
  });

  it("plain HTTP to a bound host: forwarded, never with the credential", async () => {
    await openProxy();
    const status = await new Promise<number>((done, fail) => {
      const req = request({ socketPath, path: `http://plain.test:${plainPort}/`, agent: false }, (res) => {
        res.resume();
        res.on("end", () => done(res.statusCode ?? 0));
      });
      req.on("error", fail);
      req.end();
    });
    expect(status).toBe(200);
    expect(seen[0]!.headers.authorization).toBeUndefined();
  });
});

describe("a terminated connection carries", () => {
  it("a response busier than the idle timeout to its end: idleness is measured, not age", async () => {
    await openProxy({ idleTimeoutMs: 400 });
    const answer = await httpsThrough(
      socketPath,
      { host: "bound.test", port, ca: trustDeployment() },
      { path: "/slow" },
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toMatch(/chunk1 done$/);
  });

  it("several requests, pipelined, each checked and sent in order", async () => {
    await openProxy();
    const tunnel = await connectThrough(socketPath, `bound.test:${port}`);
    const { secure } = await tlsOverTunnel(tunnel.socket, {
      ca: trustDeployment(),
      host: "bound.test",
      servername: "bound.test",
    });
    secure.write(
      "GET /1 HTTP/1.1\r\nHost: bound.test\r\n\r\n" +
        `POST /2 HTTP/1.1\r\nHost: bound.test:${port}\r\nContent-Length: 5\r\n\r\nhello` +
        "GET /3 HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n",
    );
    const chunks: Buffer[] = [];
    for await (const chunk of secure) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    expect(text.indexOf("upstream GET /1")).toBeGreaterThan(0);
    expect(text.indexOf("upstream POST /2")).toBeGreaterThan(text.indexOf("upstream GET /1"));
    expect(text).toMatch(/HTTP\/1\.1 421 [\s\S]*this connection is for bound\.test/);
    expect(seen.map((s) => [s.method, s.url, s.headers.authorization])).toEqual([
      ["GET", "/1", VALUE],
      ["POST", "/2", VALUE],
    ]);
  });
});

/** A TLS connection to `bound.test` through the proxy, terminated by it. */
async function terminated(): Promise<TLSSocket> {
  const tunnel = await connectThrough(socketPath, `bound.test:${port}`);
  expect(tunnel.status).toBe(200);
  return (
    await tlsOverTunnel(tunnel.socket, {
      ca: trustDeployment(),
      host: "bound.test",
      servername: "bound.test",
    })
  ).secure;
}

/** Everything the connection answers until it closes (or is reset: a cut-off client's is). */
async function readToEnd(secure: TLSSocket): Promise<string> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of secure) chunks.push(chunk as Buffer);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ECONNRESET") throw error;
  }
  return Buffer.concat(chunks).toString();
}

describe("a hostile client on a terminated connection", () => {
  it("is cut off when it pipelines more than a few requests: the proxy does not hold a flood", async () => {
    await openProxy();
    const secure = await terminated();
    secure.write("GET /flood HTTP/1.1\r\nHost: bound.test\r\n\r\n".repeat(2_000));
    await readToEnd(secure);
    expect(seen.length).toBeLessThanOrEqual(4);
    expect(refusals.map((r) => r[2])).toContainEqual(expect.stringMatching(/pipelined/));
  });

  it("loses the credential on the next request once the grant no longer holds it", async () => {
    // The gateway's answer at each ask: the CONNECT's, then one per request on the connection.
    const answers: (EgressGrant | undefined)[] = [
      grant,
      grant,
      // The secret removed: the host is still allowed, the request goes without it.
      { ...grant, credentials: [] },
      // The grant withdrawn (the session ended, the workspace disabled): refused, sent nowhere.
      undefined,
    ];
    let asked = 0;
    await openProxy({ grantFor: async () => answers[Math.min(asked++, answers.length - 1)] });
    const secure = await terminated();
    secure.write(
      ["/one", "/two", "/three"].map((path) => `GET ${path} HTTP/1.1\r\nHost: bound.test\r\n\r\n`).join(""),
    );
    const text = await readToEnd(secure);
    expect(text).toMatch(/HTTP\/1\.1 403 [\s\S]*no egress grant/);
    expect(seen.map((s) => [s.url, s.headers.authorization])).toEqual([
      ["/one", VALUE],
      ["/two", undefined],
    ]);
  });

  it("cannot strip the checked Host with a Connection header: the upstream gets it as it was checked", async () => {
    await openProxy();
    const answer = await httpsThrough(
      socketPath,
      { host: "bound.test", port, ca: trustDeployment() },
      {
        path: "/conn",
        headers: [
          ["Host", "bound.test"],
          ["Connection", "host, content-length"],
        ],
      },
    );
    expect(answer.status).toBe(200);
    expect(seen[0]!.host).toBe("bound.test");
    expect(seen[0]!.headers.authorization).toBe(VALUE);
  });

  it("gets no credential on a TRACE, which would echo it back", async () => {
    await openProxy();
    const answer = await httpsThrough(
      socketPath,
      { host: "bound.test", port, ca: trustDeployment() },
      { method: "TRACE", path: "/" },
    );
    expect(answer.status).toBe(200);
    expect(seen[0]!.method).toBe("TRACE");
    expect(seen[0]!.headers.authorization).toBeUndefined();
    expect(used).toEqual([]);
  });

  it("cannot smuggle a second request in a GET's chunked body: the body stays framed", async () => {
    await openProxy();
    const secure = await terminated();
    const smuggled = "GET /smuggled HTTP/1.1\r\nHost: other.test\r\n\r\n";
    secure.write(
      "GET /carrier HTTP/1.1\r\nHost: bound.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
        `${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`,
    );
    const text = await readToEnd(secure);
    expect(text).toContain("upstream GET /carrier");
    expect(seen.map((s) => s.url)).toEqual(["/carrier"]);
    expect(seen[0]!.headers["transfer-encoding"]).toBe("chunked");
  });

  it("is closed when a request's headers dribble in past the header deadline", async () => {
    await openProxy({ idleTimeoutMs: 1_000 });
    const secure = await terminated();
    const closed = new Promise<number>((resolve) => secure.once("close", () => resolve(Date.now())));
    const began = Date.now();
    secure.write("GET /dribble HTTP/1.1\r\nHost: bound.test\r\n");
    // A header line every 300 ms: never idle for the idle timeout, never a complete request.
    const dribble = setInterval(() => secure.writable && secure.write(`X-${Date.now()}: 1\r\n`), 300);
    const at = await Promise.race([
      closed,
      new Promise<number>((resolve) => setTimeout(() => resolve(-1), 6_000)),
    ]);
    clearInterval(dribble);
    expect(at, "still open after 6 s").toBeGreaterThan(0);
    expect(at - began).toBeLessThan(3_000);
    expect(seen).toEqual([]);
  });
});
