/** The Redis server of this run, for the suites that need one (CI=true: it must be up). */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { Redis } from "ioredis";
import { requireService } from "./require-service.js";

export const redisUrl = process.env.SANDPOOL_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

export async function redisAvailable(): Promise<boolean> {
  return requireService(
    "Redis",
    async () => {
      const client = new Redis(redisUrl, {
        lazyConnect: true,
        connectTimeout: 2_000,
        maxRetriesPerRequest: 0,
      });
      client.on("error", () => {});
      try {
        await client.connect();
        return (await client.ping()) === "PONG";
      } finally {
        client.disconnect();
      }
    },
    { start: 'redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no' },
  );
}

export interface PrivateRedis {
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A throw-away redis-server on a free loopback port, for tests that stop and restart it.
 * With `persistIn`, a folder, it keeps an append-only file there, synced on every write (as
 * an operator who wants nothing lost runs it): a stop (SIGKILL, a crash) loses no write Redis
 * acknowledged, and the next start reads it back.
 */
export async function startPrivateRedis(options: { persistIn?: string } = {}): Promise<PrivateRedis> {
  const persistence = options.persistIn
    ? ["--appendonly", "yes", "--appendfsync", "always", "--dir", options.persistIn]
    : ["--appendonly", "no"];
  const port = await freePort();
  let child: ChildProcess | undefined;
  const server: PrivateRedis = {
    url: `redis://127.0.0.1:${port}`,
    async start() {
      child = spawn(
        "redis-server",
        ["--bind", "127.0.0.1", "--port", String(port), "--save", "", ...persistence],
        {
          stdio: "ignore",
        },
      );
      const probe = new Redis(server.url, {
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      probe.on("error", () => {});
      for (let attempt = 0; attempt < 50; attempt++) {
        if (
          await probe.connect().then(
            () => true,
            () => false,
          )
        )
          break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      probe.disconnect();
    },
    async stop() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null) return;
      const exited = new Promise((resolve) => running.once("exit", resolve));
      running.kill("SIGKILL");
      await exited;
    },
  };
  await server.start();
  return server;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}
