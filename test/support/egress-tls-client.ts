/**
 * A sandbox's side of the egress proxy, for tests: CONNECT on the proxy's Unix socket, TLS
 * over the tunnel (trusting what the test says), then HTTP/1.1 requests over that TLS.
 */
import { once } from "node:events";
import { type IncomingHttpHeaders, request } from "node:http";
import { connect, type Socket } from "node:net";
import { type PeerCertificate, type TLSSocket, connect as tlsConnect } from "node:tls";

export interface ConnectAnswer {
  status: number;
  /** The whole answer when it is not 200. */
  text: string;
  socket: Socket;
}

/** Sends CONNECT on a fresh connection to the proxy socket; the socket stays open on 200. */
export async function connectThrough(socketPath: string, authority: string): Promise<ConnectAnswer> {
  const socket = connect(socketPath);
  await once(socket, "connect");
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  const text = await new Promise<string>((done) => {
    let received = "";
    const onData = (chunk: Buffer) => {
      received += chunk.toString("latin1");
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
  return { status, text: status === 200 ? "" : text, socket };
}

export interface TlsOverTunnel {
  secure: TLSSocket;
  peer: PeerCertificate;
}

/** TLS over an open tunnel; rejects when the handshake fails. */
export async function tlsOverTunnel(
  socket: Socket,
  options: { ca: string[]; servername?: string; host: string; alpn?: string[] },
): Promise<TlsOverTunnel> {
  const secure = tlsConnect({
    socket,
    ca: options.ca,
    host: options.host,
    ...(options.servername === undefined ? {} : { servername: options.servername }),
    ...(options.alpn ? { ALPNProtocols: options.alpn } : {}),
  });
  await new Promise<void>((resolve, reject) => {
    secure.once("secureConnect", resolve);
    secure.once("error", reject);
    secure.once("close", () => reject(new Error("closed before the handshake ended")));
  });
  return { secure, peer: secure.getPeerCertificate() };
}

export interface Exchange {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request over an established TLS connection (raw header lines, so duplicates can be sent). */
export function requestOver(
  secure: TLSSocket,
  options: { method?: string; path: string; headers: [string, string][]; body?: string },
): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const flat = options.headers.flat();
    const req = request(
      {
        createConnection: () => secure,
        method: options.method ?? "GET",
        path: options.path,
        headers: flat,
        setHost: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** CONNECT, TLS, one request: the common case. */
export async function httpsThrough(
  socketPath: string,
  target: { host: string; port: number; ca: string[] },
  request: { method?: string; path: string; headers?: [string, string][]; body?: string },
): Promise<Exchange & { peer: PeerCertificate }> {
  const tunnel = await connectThrough(socketPath, `${target.host}:${target.port}`);
  if (tunnel.status !== 200) throw new Error(`CONNECT answered ${tunnel.text}`);
  const { secure, peer } = await tlsOverTunnel(tunnel.socket, {
    ca: target.ca,
    host: target.host,
    servername: target.host,
  });
  try {
    const exchange = await requestOver(secure, {
      ...request,
      headers: request.headers ?? [["Host", `${target.host}:${target.port}`]],
    });
    return { ...exchange, peer };
  } finally {
    secure.destroy();
  }
}
