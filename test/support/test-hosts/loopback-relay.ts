/**
 * A TCP relay in the root namespace from the test network to a loopback service: Redis and
 * Postgres listen on 127.0.0.1, which a process inside a test host cannot reach (its
 * loopback is its own). The relay listens on the root namespace's test-network address and
 * connects each client to 127.0.0.1:<port>; a cut() host loses it like any other peer.
 */
import net from "node:net";

export interface LoopbackRelay {
  host: string;
  port: number;
  close(): Promise<void>;
}

export async function startLoopbackRelay(
  listenHost: string,
  targetPort: number,
  listenPort = targetPort,
): Promise<LoopbackRelay> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: "127.0.0.1", port: targetPort });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listenPort, listenHost, () => resolve());
  });
  const address = server.address() as net.AddressInfo;
  return {
    host: listenHost,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
