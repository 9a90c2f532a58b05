/**
 * The filtering proxy through which egress sandboxes reach the network. A sandbox has no
 * network interface but loopback; its only way out is one Unix socket per sandbox, in the
 * directory the gateway bind-mounts into it, on which this proxy serves HTTP-proxy requests:
 *
 *   - `CONNECT host:port` (TLS and any other TCP): checked, then tunnelled;
 *   - absolute-form `GET http://host/path` (plain HTTP): checked, then forwarded with
 *     hop-by-hop and Proxy-* headers dropped.
 *
 * Every request is checked against the sandbox's grant, read afresh from `grantFor` (no grant,
 * e.g. while the sandbox idles in the pool: everything is refused), by src/egress/egress-rules:
 * the name before it is resolved, then every address it resolves to; the connection goes to
 * one of those checked addresses, so a second resolution cannot point it elsewhere.
 * Refusals answer 403 with a one-line text reason. Bounds per sandbox: connections open at
 * once (tunnels and forwarded requests alike), a connect deadline (resolution included),
 * an idle timeout; bytes are counted per sandbox for metering.
 *
 * A CONNECT to a host one of the grant's credentials is bound to (host and port) is not
 * tunnelled but terminated, after the same checks, by egress-tls-bridge.ts, which adds the
 * credential to the requests inside. Plain-HTTP requests never get a credential.
 */
import { chmod, rm } from "node:fs/promises";
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { isIP, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { normalizeHost } from "../policy-schema/egress-patterns.js";
import { ConnectFailure, connectCheckedAddress } from "./connect-checked-address.js";
import { boundPattern, credentialsForDestination } from "./credential-match.js";
import type { EgressProxyOptions, EgressUsage, GrantSource } from "./egress-proxy-options.js";
import { type EgressResolver, interfaceAddresses, resolveWithin, systemResolver } from "./egress-resolve.js";
import {
  checkAddresses,
  checkDestination,
  type EgressDenySettings,
  type EgressGrant,
} from "./egress-rules.js";
import { EgressTlsBridge } from "./egress-tls-bridge.js";
import {
  answerSocket,
  endToEndHeaders,
  parseAbsoluteHttpUrl,
  parseAuthority,
  type Target,
} from "./egress-wire.js";

interface SandboxProxy {
  sandboxId: string;
  socketPath: string;
  server: Server;
  grantFor: GrantSource;
  usage: EgressUsage;
  /** Every socket of this sandbox, both sides, so close() ends them all. */
  sockets: Set<Duplex>;
  active: number;
}

type Admission =
  | { ok: true; addresses: string[]; grant: EgressGrant }
  | { ok: false; status: number; reason: string };

const PREFIX = "sandpool egress: ";

export class EgressProxy {
  private readonly sandboxes = new Map<string, SandboxProxy>();
  private readonly resolve: EgressResolver;
  private readonly hostAddresses: () => readonly string[];
  private bridge: EgressTlsBridge | undefined;

  constructor(private readonly options: EgressProxyOptions) {
    this.resolve = options.resolve ?? systemResolver;
    this.hostAddresses = options.hostAddresses ?? interfaceAddresses;
    const { injection, settings, log } = options;
    this.bridge = injection && new EgressTlsBridge({ ...injection, ...settings, log });
  }

  /** Injects credentials from now on (serve loads its CA once the proxy exists: it may live in Postgres). */
  useInjection(injection: NonNullable<EgressProxyOptions["injection"]>): void {
    this.bridge = new EgressTlsBridge({ ...injection, ...this.options.settings, log: this.options.log });
  }

  /** Serves a sandbox's proxy socket at `socketPath` (a stale file there is replaced). */
  async open(sandboxId: string, socketPath: string, grantFor: GrantSource): Promise<void> {
    if (this.sandboxes.has(sandboxId)) throw new Error(`egress proxy for ${sandboxId} is open already`);
    // No whole-request deadline (a plain-HTTP upload may take long: idleness is bounded per
    // socket instead); a request's headers must come within a minute at most.
    const server = createServer({
      requestTimeout: 0,
      headersTimeout: Math.min(this.options.settings.idleTimeoutMs, 60_000),
    });
    const state: SandboxProxy = {
      sandboxId,
      socketPath,
      server,
      grantFor,
      usage: { sentBytes: 0, receivedBytes: 0, connections: 0, refused: 0 },
      sockets: new Set(),
      active: 0,
    };
    // Keep-alive clients beyond the tunnel bound hold no upstream; this only stops a flood.
    server.maxConnections = this.options.settings.maxTunnelsPerSandbox * 2 + 8;
    server.on("connection", (socket: Socket) => this.track(state, socket));
    server.on("connect", (req: IncomingMessage, client: Duplex, head: Buffer) => {
      void this.tunnel(state, req, client, head);
    });
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      void this.forward(state, req, res);
    });
    server.on("clientError", (_error, socket: Duplex) => answerSocket(socket, 400, `${PREFIX}bad request`));
    await rm(socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    // The sandbox's user is not the gateway's: it must be able to connect.
    await chmod(socketPath, 0o666);
    this.sandboxes.set(sandboxId, state);
  }

  /** The sandboxes whose proxies are open here. */
  sandboxIds(): string[] {
    return [...this.sandboxes.keys()];
  }

  /** What a sandbox's proxy has counted so far; undefined when none is open. */
  usage(sandboxId: string): EgressUsage | undefined {
    const state = this.sandboxes.get(sandboxId);
    return state && { ...state.usage };
  }

  /** Ends every connection of the sandbox, removes its socket file, and answers its final counts. */
  async close(sandboxId: string): Promise<EgressUsage | undefined> {
    const state = this.sandboxes.get(sandboxId);
    if (!state) return undefined;
    this.sandboxes.delete(sandboxId);
    const closed = new Promise<void>((resolve) => state.server.close(() => resolve()));
    const ended = [...state.sockets].map(
      (socket) =>
        new Promise<void>((resolve) => {
          if (socket.closed) return resolve();
          socket.once("close", () => resolve());
          socket.destroy();
        }),
    );
    await Promise.all([closed, ...ended]);
    await rm(state.socketPath, { force: true });
    return { ...state.usage };
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.sandboxes.keys()].map((id) => this.close(id)));
  }

  private track(state: SandboxProxy, socket: Duplex): void {
    state.sockets.add(socket);
    socket.on("error", () => socket.destroy());
    socket.once("close", () => state.sockets.delete(socket));
  }

  private count(state: SandboxProxy, sent: number, received: number): void {
    if (sent === 0 && received === 0) return;
    state.usage.sentBytes += sent;
    state.usage.receivedBytes += received;
    this.options.onBytes?.(state.sandboxId, sent, received);
  }

  private refused(state: SandboxProxy, target: Target | undefined, status: number, reason: string): string {
    state.usage.refused += 1;
    this.options.log.info(
      { sandboxId: state.sandboxId, host: target?.host, port: target?.port, status, reason },
      "egress refused",
    );
    this.options.onRefused?.(state.sandboxId, target?.host ?? "", reason, status);
    return `${PREFIX}${reason}`;
  }

  /** A slot under the bound, released exactly once. */
  private slot(state: SandboxProxy): (() => void) | undefined {
    if (state.active >= this.options.settings.maxTunnelsPerSandbox) return undefined;
    state.active += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      state.active -= 1;
    };
  }

  /** The grant, the name, the resolution and every address: what decides a request. */
  /** The sandbox's grant as it is now, and whether it lets the sandbox reach `target`. */
  private async grantTo(
    state: SandboxProxy,
    target: Target,
  ): Promise<
    | { ok: true; grant: EgressGrant; settings: EgressDenySettings }
    | { ok: false; status: number; reason: string }
  > {
    let grant: EgressGrant | undefined;
    try {
      grant = await state.grantFor();
    } catch (error) {
      this.options.log.warn({ sandboxId: state.sandboxId, err: error }, "egress grant could not be read");
      return { ok: false, status: 503, reason: "the workspace's egress policy could not be read" };
    }
    if (grant === undefined) return { ok: false, status: 403, reason: "this sandbox has no egress grant" };
    const settings: EgressDenySettings = {
      denyCidrs: this.options.settings.denyCidrs,
      allowPorts: this.options.settings.allowPorts,
      hostAddresses: this.hostAddresses(),
    };
    const destination = checkDestination(target, grant, settings);
    if (!destination.allowed) return { ok: false, status: 403, reason: destination.reason };
    return { ok: true, grant, settings };
  }

  private async admit(state: SandboxProxy, target: Target): Promise<Admission> {
    const granted = await this.grantTo(state, target);
    if (!granted.ok) return granted;
    const { grant, settings } = granted;
    let addresses: string[];
    try {
      addresses =
        isIP(target.host) !== 0
          ? [target.host]
          : await resolveWithin(this.resolve, target.host, this.options.settings.connectTimeoutMs);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "ERESOLVE";
      return { ok: false, status: 502, reason: `cannot resolve '${target.host}' (${code})` };
    }
    const checked = checkAddresses(addresses, grant, settings);
    if (!checked.allowed) return { ok: false, status: 403, reason: checked.reason };
    return { ok: true, addresses, grant };
  }

  private async connect(state: SandboxProxy, target: Target, addresses: string[]): Promise<Socket> {
    const upstream = await connectCheckedAddress(
      addresses,
      target.port,
      this.options.settings.connectTimeoutMs,
    );
    state.usage.connections += 1;
    this.track(state, upstream);
    upstream.setTimeout(this.options.settings.idleTimeoutMs, () => upstream.destroy());
    return upstream;
  }

  private async tunnel(
    state: SandboxProxy,
    req: IncomingMessage,
    client: Duplex,
    head: Buffer,
  ): Promise<void> {
    const target = parseAuthority(req.url);
    if (!target)
      return answerSocket(client, 400, this.refused(state, undefined, 400, "CONNECT needs host:port"));
    const release = this.slot(state);
    if (!release) {
      const reason = `${this.options.settings.maxTunnelsPerSandbox} connections are open already`;
      return answerSocket(client, 429, this.refused(state, target, 429, reason));
    }
    client.once("close", release);
    const admission = await this.admit(state, target);
    if (!admission.ok)
      return answerSocket(
        client,
        admission.status,
        this.refused(state, target, admission.status, admission.reason),
      );
    if (client.destroyed) return release();
    const credentials = credentialsForDestination(admission.grant, target.host, target.port);
    if (credentials.length > 0) return this.terminate(state, target, admission.addresses, client, head);
    let upstream: Socket;
    try {
      upstream = await this.connect(state, target, admission.addresses);
    } catch (error) {
      const code = error instanceof ConnectFailure ? error.code : "ECONNECT";
      const reason = `cannot connect to ${target.host}:${target.port} (${code})`;
      return answerSocket(client, 502, this.refused(state, target, 502, reason));
    }
    if (client.destroyed) {
      upstream.destroy();
      return;
    }
    upstream.once("close", () => {
      release();
      client.destroy();
    });
    client.once("close", () => upstream.destroy());
    (client as Socket).setTimeout?.(this.options.settings.idleTimeoutMs, () => client.destroy());
    upstream.on("data", (chunk: Buffer) => this.count(state, 0, chunk.length));
    client.on("data", (chunk: Buffer) => this.count(state, chunk.length, 0));
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) {
      this.count(state, head.length, 0);
      upstream.write(head);
    }
    upstream.pipe(client);
    client.pipe(upstream);
  }

  /** A CONNECT to a host with credentials: TLS ends here (egress-tls-bridge.ts). */
  private async terminate(
    state: SandboxProxy,
    target: Target,
    addresses: string[],
    client: Duplex,
    head: Buffer,
  ): Promise<void> {
    if (!this.bridge) {
      const reason = `credentials are bound to ${target.host} but this gateway has no egress CA to add them with`;
      return answerSocket(client, 503, this.refused(state, target, 503, reason));
    }
    (client as Socket).setTimeout?.(this.options.settings.idleTimeoutMs, () => client.destroy());
    // `bound.test.` and `bound.test` are one host: its leaf, SNI and Host checks use one form.
    const named: Target = { ...target, host: normalizeHost(target.host) };
    await this.bridge.serve(
      {
        sandboxId: state.sandboxId,
        target: named,
        credentialsNow: async () => {
          const granted = await this.grantTo(state, target);
          return granted.ok
            ? { ok: true, credentials: credentialsForDestination(granted.grant, target.host, target.port) }
            : granted;
        },
        connect: () => this.connect(state, target, addresses),
        count: (sent, received) => this.count(state, sent, received),
        onCredentialUsed: (secret, current) =>
          this.options.onCredentialUsed?.(state.sandboxId, secret, boundPattern(current, secret, named.host)),
        refuse: (status, reason) => this.refused(state, named, status, reason),
      },
      client,
      head,
    );
  }

  private async forward(state: SandboxProxy, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const answer = (status: number, text: string): void => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close" });
      res.end(`${text}\n`);
    };
    const target = parseAbsoluteHttpUrl(req.url);
    if (!target) {
      const reason = /^https:/i.test(req.url ?? "")
        ? "use CONNECT for https:// URLs"
        : "this is an egress proxy: send an absolute http:// URL, or CONNECT host:port";
      return answer(400, this.refused(state, undefined, 400, reason));
    }
    const release = this.slot(state);
    if (!release) {
      const reason = `${this.options.settings.maxTunnelsPerSandbox} connections are open already`;
      return answer(429, this.refused(state, target, 429, reason));
    }
    res.once("close", release);
    const admission = await this.admit(state, target);
    if (!admission.ok)
      return answer(admission.status, this.refused(state, target, admission.status, admission.reason));
    let upstream: Socket;
    try {
      upstream = await this.connect(state, target, admission.addresses);
    } catch (error) {
      const code = error instanceof ConnectFailure ? error.code : "ECONNECT";
      return answer(
        502,
        this.refused(state, target, 502, `cannot connect to ${target.host}:${target.port} (${code})`),
      );
    }
    upstream.once("close", () => this.count(state, upstream.bytesWritten, upstream.bytesRead));
    res.once("close", () => upstream.destroy());
    const outgoing = httpRequest({
      createConnection: () => upstream,
      method: req.method,
      path: target.path,
      // The absolute URL names the host the request is for (RFC 9112 section 3.2.2).
      headers: { ...endToEndHeaders(req.headers), host: target.authority, connection: "close" },
    });
    outgoing.on("response", (response) => {
      // The remote end is anyone's server: a status Node's client accepts (099, 000) but its
      // server refuses would throw here, inside an event handler, and take the gateway down.
      const status = response.statusCode ?? 0;
      if (status < 100 || status > 599) {
        response.destroy();
        return answer(
          502,
          this.refused(state, target, 502, `${target.host}:${target.port} answered status ${status}`),
        );
      }
      try {
        res.writeHead(status, response.statusMessage, endToEndHeaders(response.headers));
      } catch {
        response.destroy();
        res.destroy();
        return;
      }
      response.pipe(res);
      response.on("error", () => res.destroy());
    });
    outgoing.on("error", (error: NodeJS.ErrnoException) => {
      answer(
        502,
        this.refused(state, target, 502, `${target.host}:${target.port} failed (${error.code ?? "ERROR"})`),
      );
    });
    req.pipe(outgoing);
  }
}
