/**
 * A Unix-socket relay in front of a Docker engine that counts the API calls through it, by
 * method and path (API version and container ids left out): `POST /containers/:id/start`.
 * A runtime pointed at `host` makes the same calls it would make to the engine itself.
 */
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const REQUEST_LINE = /^(GET|HEAD|POST|PUT|DELETE) ([^?\s]+)/;

export interface DockerCallCounter {
  /** unix:// endpoint of the relay. */
  host: string;
  /** The calls counted since the last reset, by `METHOD /path`. */
  calls(): Record<string, number>;
  reset(): void;
  close(): Promise<void>;
}

export async function countDockerCalls(engineSocket: string): Promise<DockerCallCounter> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "sp-dc-"));
  const socketPath = path.join(dir, "docker.sock");
  let counts: Record<string, number> = {};
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const engine = net.connect(engineSocket);
    sockets.add(client).add(engine);
    client.on("data", (chunk: Buffer) => {
      // A request starts a chunk of its own: the runtime writes one request at a time per
      // connection. Only the method and path are read (a create's query holds its whole spec).
      const line = REQUEST_LINE.exec(chunk.toString("latin1", 0, 512));
      if (line) {
        const route = line[2]!.replace(/^\/v\d+\.\d+/, "").replace(/\/[0-9a-f]{64}(?=\/|$)/, "/:id");
        const key = `${line[1]} ${route}`;
        counts[key] = (counts[key] ?? 0) + 1;
      }
      engine.write(chunk);
    });
    engine.pipe(client);
    const close = () => {
      client.destroy();
      engine.destroy();
      sockets.delete(client);
      sockets.delete(engine);
    };
    client.on("close", close).on("error", close);
    engine.on("close", close).on("error", close);
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    host: `unix://${socketPath}`,
    calls: () => ({ ...counts }),
    reset: () => {
      counts = {};
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
