/**
 * Inside an egress sandbox: the container has no network but loopback, and the gateway's
 * filtering proxy is reachable only through a Unix socket in the bind-mounted directory.
 * Programs expect an HTTP proxy at a TCP address (HTTP_PROXY=http://127.0.0.1:3128 for curl,
 * pip, requests), so this listens on 127.0.0.1 and pipes every connection, unchanged, to
 * that socket. It decides nothing: all filtering is the gateway's.
 */
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import type { Logger } from "pino";

export interface EgressForwarder {
  /** The port it listens on (useful when 0 was asked for). */
  port: number;
  close(): Promise<void>;
}

export async function startEgressForwarder(
  options: { socketPath: string; port: number; host?: string },
  log: Logger,
): Promise<EgressForwarder> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(options.socketPath);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
    }
    // Either side failing or ending tears down both: a half-open pair would leak.
    client.on("error", () => upstream.destroy());
    upstream.on("error", (error: NodeJS.ErrnoException) => {
      log.warn({ err: error.code ?? error.message }, "egress proxy socket unreachable");
      client.destroy();
    });
    client.once("close", () => upstream.destroy());
    upstream.once("close", () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: options.host ?? "127.0.0.1", port: options.port }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", (error) => log.warn({ err: error }, "egress forwarder error"));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
