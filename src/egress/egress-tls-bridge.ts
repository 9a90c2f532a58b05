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
import { type SecureContext, TLSSocket, connect as tlsConnect } from "node:tls";
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

/** One terminated CONNECT: whose, to where, with what, and the proxy's hooks for it. */
export interface BridgedConnect {
  sandboxId: string;
  target: Target;
  credentials: readonly EgressCredential[];
  /** A TCP connection to a checked address, counted and bounded as the proxy's are. */
  connect: () => Promise<Socket>;
  count: (sent: number, received: number) => void;
  onCredentialUsed: (secret: string) => void;
  /** A refusal: counted, logged and reported by the proxy; returns the text to answer. */
  refuse: (status: number, reason: string) => string;
}

export class EgressTlsBridge {
  constructor(private readonly options: TlsBridgeOptions) {}

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

  /** HTTP/1.1 on the terminated connection, one request at a time (pipelined ones wait). */
  private serveHttp(connect: BridgedConnect, secure: TLSSocket): void {
    const server = createServer({
      requestTimeout: 0,
      headersTimeout: Math.min(this.options.idleTimeoutMs, 60_000),
      keepAliveTimeout: this.options.idleTimeoutMs,
    });
    let queue = Promise.resolve();
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      queue = queue.then(() => this.handle(connect, req, res)).catch(() => void res.destroy());
    });
    server.on("clientError", (_error, socket: Duplex) => {
      answerSocket(socket, 400, "sandpool egress: bad request");
    });
    server.emit("connection", secure);
  }

  /** Resolves when the request is done with, answered or not. */
  private handle(connect: BridgedConnect, req: IncomingMessage, res: ServerResponse): Promise<void> {
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
    const credential = credentialForRequest(connect.credentials, req.method ?? "GET", path);
    const headers: OutgoingHttpHeaders = { ...endToEndHeaders(req.headers), connection: "close" };
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
    void this.send(connect, req, res, headers, credential, answer);
    return done;
  }

  private async send(
    connect: BridgedConnect,
    req: IncomingMessage,
    res: ServerResponse,
    headers: OutgoingHttpHeaders,
    credential: EgressCredential | undefined,
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
    if (credential) connect.onCredentialUsed(credential.secret);
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
        ca: [...this.options.upstreamCa],
        ALPNProtocols: ["http/1.1"],
        minVersion: "TLSv1.2",
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

class UpstreamTlsFailure extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}
