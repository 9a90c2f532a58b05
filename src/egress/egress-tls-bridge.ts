/**
 * A CONNECT to a host a credential is bound to, terminated here instead of tunnelled: the
 * sandbox's TLS ends at the proxy, under a leaf certificate for that host signed by the
 * deployment CA (which egress sandboxes trust); the HTTP/1.1 requests inside are read one at
 * a time and each is sent on over a new TLS connection to one of the addresses the egress
 * rules already checked (never resolved again), verifying the host's real certificate
 * against Node's root store and egress.upstreamCaFiles. On the way out:
 *
 *   - a ClientHello naming another host (SNI) than the CONNECT is refused;
 *   - only http/1.1 is offered (ALPN): the requests are read with node:http;
 *   - a request whose Host header is not the CONNECT's host is answered 421, sent nowhere;
 *   - a request the credential's methods and paths admit gets its header, replacing any
 *     the sandbox sent under that name; others go on without it;
 *   - an upstream whose certificate does not verify gets no request at all (502).
 *
 * What the sandbox is told never holds a credential's value; neither do the logs.
 */
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from "node:http";
import { isIP, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { createSecureContext, type SecureContext, TLSSocket, connect as tlsConnect } from "node:tls";
import type { Logger } from "pino";
import { credentialForRequest, credentialHeaderProblem, hostHeaderMatches } from "./credential-match.js";
import type { EgressCredential } from "./egress-rules.js";
import { answerSocket, endToEndHeaders, type Target } from "./egress-wire.js";

/** The signing side: a TLS context for a host's leaf certificate. */
export interface LeafSource {
  contextFor(host: string): Promise<SecureContext>;
  /** The CA certificate (PEM) the leaves chain to: what sandboxes trust. */
  readonly caPem: string;
}

export interface TlsBridgeOptions {
  leaves: LeafSource;
  /** PEM certificates upstream servers are verified against (Node's roots and the operator's). */
  upstreamCa: readonly string[];
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  log: Logger;
}

/** What a request on a terminated connection may carry now, or why it is refused. */
export type CredentialsNow =
  | { ok: true; credentials: readonly EgressCredential[] }
  | { ok: false; status: number; reason: string };

/** One terminated CONNECT: whose, to where, with what, and the proxy's hooks for it. */
export interface BridgedConnect {
  sandboxId: string;
  target: Target;
  /**
   * The grant read again for each request (cached briefly by the gateway): a secret removed,
   * a session's grant withdrawn or the host no longer allowed holds for the next request on
   * an open connection too, not only for the next connection.
   */
  credentialsNow: () => Promise<CredentialsNow>;
  /** A TCP connection to a checked address, counted and bounded as the proxy's are. */
  connect: () => Promise<Socket>;
  count: (sent: number, received: number) => void;
  onCredentialUsed: (secret: string, credentials: readonly EgressCredential[]) => void;
  /** A refusal: counted, logged and reported by the proxy; returns the text to answer. */
  refuse: (status: number, reason: string) => string;
}

/**
 * Requests read ahead of the one being answered on a terminated connection. A client that
 * pipelines more is cut off: each request read is an object held until its turn, and nothing
 * written back would ever slow the reading down (a 13 MB burst of GETs held 550 MB).
 */
const MAX_PIPELINED = 4;
/** Requests served on one terminated connection, as Node's own servers can bound them. */
const MAX_REQUESTS_PER_CONNECTION = 1_000;

export class EgressTlsBridge {
  /** Built once: a context with every root is tens of milliseconds of CPU to make. */
  private readonly upstreamContext: SecureContext;

  constructor(private readonly options: TlsBridgeOptions) {
    this.upstreamContext = createSecureContext({ ca: [...options.upstreamCa], minVersion: "TLSv1.2" });
  }

  /** Answers the CONNECT and serves it; `client` has been admitted (destination and addresses). */
  async serve(connect: BridgedConnect, client: Duplex, head: Buffer): Promise<SecureContext | undefined> {
    const { host } = connect.target;
    let context: SecureContext;
    try {
      context = await this.options.leaves.contextFor(host);
    } catch (error) {
      this.options.log.error({ sandboxId: connect.sandboxId, host, err: error }, "egress leaf certificate");
      answerSocket(client, 500, connect.refuse(500, `no certificate could be made for ${host}`));
      return undefined;
    }
    if (client.destroyed) return undefined;
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    // Bytes the client sent after its CONNECT (the start of its ClientHello) go to TLS first.
    if (head.length > 0) client.unshift(head);
    const secure = new TLSSocket(client as Socket, {
      isServer: true,
      secureContext: context,
      ALPNProtocols: ["http/1.1"],
      SNICallback: (servername, done) => {
        if (servername.toLowerCase().replace(/\.$/, "") === host) return done(null, context);
        connect.refuse(403, `TLS server name '${servername.slice(0, 255)}' is not the CONNECT's host`);
        done(new Error("server name differs from the CONNECT host"));
      },
    });
    secure.on("error", () => client.destroy());
    secure.once("close", () => client.destroy());
    this.serveHttp(connect, secure);
    return context;
  }

  /**
   * HTTP/1.1 on the terminated connection, one request at a time: reading pauses while a
   * request waits its turn, a client that pipelines past MAX_PIPELINED is cut off, and a
   * request's headers must be complete within the header deadline (Node enforces its own
   * headersTimeout only on servers that listen; this one is handed its socket).
   */
  private serveHttp(connect: BridgedConnect, secure: TLSSocket): void {
    const server = createServer({
      requestTimeout: 0,
      keepAliveTimeout: this.options.idleTimeoutMs,
    });
    server.maxRequestsPerSocket = MAX_REQUESTS_PER_CONNECTION;
    const headerDeadlineMs = Math.min(this.options.idleTimeoutMs, 60_000);
    let headerTimer: NodeJS.Timeout | undefined;
    const awaitHeaders = () => {
      clearTimeout(headerTimer);
      headerTimer = setTimeout(() => secure.destroy(), headerDeadlineMs);
      headerTimer.unref();
    };
    secure.once("close", () => clearTimeout(headerTimer));
    let queue = Promise.resolve();
    let waiting = 0;
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      clearTimeout(headerTimer);
      if (secure.destroyed) return void res.destroy();
      if (++waiting > MAX_PIPELINED) {
        connect.refuse(429, `more than ${MAX_PIPELINED} requests pipelined on one connection`);
        return void secure.destroy();
      }
      // One in flight: what the client sends meanwhile stays in the kernel's buffers.
      if (waiting > 1) secure.pause();
      queue = queue
        .then(() => this.handle(connect, req, res))
        .catch(() => void res.destroy())
        .finally(() => {
          waiting -= 1;
          if (waiting <= 1) secure.resume();
          if (waiting === 0) awaitHeaders();
        });
    });
    server.on("clientError", (_error, socket: Duplex) => {
      answerSocket(socket, 400, "sandpool egress: bad request");
    });
    awaitHeaders();
    server.emit("connection", secure);
  }

  /** Resolves when the request is done with, answered or not. */
  private async handle(connect: BridgedConnect, req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Its connection was cut while it waited its turn (a pipelining flood): nothing to answer.
    if (res.destroyed) return;
    const done = new Promise<void>((resolve) => res.once("close", resolve));
    const { host, port } = connect.target;
    const answer = (status: number, text: string): void => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close" });
      res.end(`${text}\n`);
    };
    if (!hostHeaderMatches(req.headers.host, host, port)) {
      answer(421, connect.refuse(421, `this connection is for ${host}: its requests must name it as Host`));
      return done;
    }
    const path = req.url ?? "";
    if (!path.startsWith("/")) {
      answer(400, connect.refuse(400, "requests inside a CONNECT tunnel take an origin-form target (/path)"));
      return done;
    }
    const now = await connect.credentialsNow();
    if (!now.ok) {
      answer(now.status, connect.refuse(now.status, now.reason));
      return done;
    }
    const credential = credentialForRequest(now.credentials, req.method ?? "GET", path);
    const headers: OutgoingHttpHeaders = {
      ...endToEndHeaders(req.headers),
      ...requestFraming(req),
      connection: "close",
    };
    const problem = credential && credentialHeaderProblem(credential);
    if (problem) {
      answer(502, connect.refuse(502, problem));
      return done;
    }
    if (credential) {
      // endToEndHeaders lower-cases names: one delete drops every spelling the sandbox sent.
      delete headers[credential.header.toLowerCase()];
      headers[credential.header.toLowerCase()] = credential.value;
    }
    void this.send(connect, req, res, headers, credential && { credential, of: now.credentials }, answer);
    return done;
  }

  private async send(
    connect: BridgedConnect,
    req: IncomingMessage,
    res: ServerResponse,
    headers: OutgoingHttpHeaders,
    sent: { credential: EgressCredential; of: readonly EgressCredential[] } | undefined,
    answer: (status: number, text: string) => void,
  ): Promise<void> {
    const { host, port } = connect.target;
    let upstream: TLSSocket;
    let tally: () => void;
    try {
      ({ secure: upstream, tally } = await this.connectVerified(connect));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "ECONNECT";
      const untrusted = error instanceof UpstreamTlsFailure;
      const reason = untrusted
        ? `${host}:${port} did not present a certificate this gateway trusts (${code})`
        : `cannot connect to ${host}:${port} (${code})`;
      return answer(502, connect.refuse(502, reason));
    }
    if (res.destroyed) return void upstream.destroy();
    res.once("close", () => upstream.destroy());
    let outgoing: ReturnType<typeof httpRequest>;
    try {
      outgoing = httpRequest({
        createConnection: () => upstream,
        method: req.method,
        path: req.url,
        headers,
      });
    } catch (error) {
      // A header or method Node refuses throws here; its message may quote a header value.
      upstream.destroy();
      const code = (error as NodeJS.ErrnoException).code ?? "ERROR";
      return answer(502, connect.refuse(502, `the request could not be sent to ${host}:${port} (${code})`));
    }
    if (sent) connect.onCredentialUsed(sent.credential.secret, sent.of);
    outgoing.on("response", (response) => {
      tally();
      const status = response.statusCode ?? 0;
      if (status < 100 || status > 599) {
        response.destroy();
        return answer(502, connect.refuse(502, `${host}:${port} answered status ${status}`));
      }
      try {
        res.writeHead(status, response.statusMessage, endToEndHeaders(response.headers));
      } catch {
        response.destroy();
        return void res.destroy();
      }
      response.on("data", tally);
      response.pipe(res);
      response.on("error", () => res.destroy());
    });
    outgoing.on("error", (error: NodeJS.ErrnoException) => {
      answer(502, connect.refuse(502, `${host}:${port} failed (${error.code ?? "ERROR"})`));
    });
    req.pipe(outgoing);
  }

  /** TCP to a checked address, then TLS to the host's name, verified before a byte of HTTP. */
  private async connectVerified(connect: BridgedConnect): Promise<{ secure: TLSSocket; tally: () => void }> {
    const raw = await connect.connect();
    // TLS reads the TCP socket below JavaScript ('data' never fires on it): its counters
    // are read instead, whenever the response moves and when the connection ends.
    const counted = { sent: 0, received: 0 };
    const tally = () => {
      connect.count(raw.bytesWritten - counted.sent, raw.bytesRead - counted.received);
      counted.sent = raw.bytesWritten;
      counted.received = raw.bytesRead;
    };
    raw.once("close", tally);
    const { host } = connect.target;
    return new Promise((resolve, reject) => {
      const secure = tlsConnect({
        socket: raw,
        // An IP literal is no server name (RFC 6066); its certificate must name the address.
        ...(isIP(host) === 0 ? { servername: host } : {}),
        host,
        secureContext: this.upstreamContext,
        ALPNProtocols: ["http/1.1"],
        rejectUnauthorized: true,
      });
      const timer = setTimeout(() => {
        secure.destroy();
        reject(new UpstreamTlsFailure("TLS handshake timed out", "ETIMEDOUT"));
      }, this.options.connectTimeoutMs);
      secure.once("secureConnect", () => {
        clearTimeout(timer);
        secure.removeAllListeners("error");
        secure.on("error", () => secure.destroy());
        resolve({ secure, tally });
      });
      secure.once("error", (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        secure.destroy();
        raw.destroy();
        reject(new UpstreamTlsFailure(error.message, error.code ?? "ETLS"));
      });
    });
  }
}

/**
 * The headers the proxy owns on the way out, whatever the request's Connection header named
 * (it may name `host` or `content-length`, which endToEndHeaders then drops): the Host that
 * was checked, and the body's framing as it came (a GET with a chunked body is still chunked,
 * not raw bytes after the headers, read upstream as a second request).
 */
function requestFraming(req: IncomingMessage): OutgoingHttpHeaders {
  const framing: OutgoingHttpHeaders = { host: req.headers.host };
  if (/\bchunked\b/i.test(String(req.headers["transfer-encoding"] ?? "")))
    framing["transfer-encoding"] = "chunked";
  else if (req.headers["content-length"] !== undefined)
    framing["content-length"] = req.headers["content-length"];
  return framing;
}

class UpstreamTlsFailure extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}
