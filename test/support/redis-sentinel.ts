/**
 * A throw-away Redis master watched by one Sentinel, both on free loopback ports, both
 * password-protected (so the credentials of each reach the right server). The servers die
 * with the test process (SIGKILL on exit) if `stop` is never reached.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import type { RedisTarget } from "../../src/store/coordination/redis/redis-connection.js";
import { waitFor } from "./wait-for.js";

const HOST = "127.0.0.1";
export const SENTINEL_MASTER_NAME = "sandpool-test-master";

export interface RedisSentinelHandle {
  target: Extract<RedisTarget, { kind: "sentinel" }>;
  /** The master's own address (a direct client for checks). */
  masterPort: number;
  masterPassword: string;
  stop(): Promise<void>;
}

export async function startRedisSentinel(): Promise<RedisSentinelHandle> {
  const root = await mkdtemp(path.join(tmpdir(), "sandpool-redis-sentinel-"));
  const masterPort = await freePort();
  const sentinelPort = await freePort();
  const masterPassword = `master-${process.pid}`;
  const sentinelPassword = `sentinel-${process.pid}`;
  const children: ChildProcess[] = [];
  const killAll = () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  };
  process.once("exit", killAll);

  const handle: RedisSentinelHandle = {
    target: {
      kind: "sentinel",
      sentinels: [{ host: HOST, port: sentinelPort }],
      name: SENTINEL_MASTER_NAME,
      sentinelPassword,
      password: masterPassword,
      tls: false,
    },
    masterPort,
    masterPassword,
    async stop() {
      const exits = children
        .filter((child) => child.exitCode === null)
        .map((child) => new Promise((resolve) => child.once("exit", resolve)));
      killAll();
      await Promise.all(exits);
      process.removeListener("exit", killAll);
      await rm(root, { recursive: true, force: true });
    },
  };

  try {
    children.push(
      spawn(
        "redis-server",
        [
          ...["--bind", HOST, "--port", String(masterPort), "--dir", root],
          ...["--requirepass", masterPassword, "--save", "", "--appendonly", "no"],
        ],
        { stdio: "ignore" },
      ),
    );
    await waitFor(() => answers(masterPort, masterPassword), 10_000, "the Redis master");
    // Sentinel rewrites its configuration file, so it gets one of its own.
    const config = path.join(root, "sentinel.conf");
    await writeFile(
      config,
      [
        `bind ${HOST}`,
        `port ${sentinelPort}`,
        `dir ${root}`,
        `requirepass ${sentinelPassword}`,
        `sentinel monitor ${SENTINEL_MASTER_NAME} ${HOST} ${masterPort} 1`,
        `sentinel auth-pass ${SENTINEL_MASTER_NAME} ${masterPassword}`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} 5000`,
        "",
      ].join("\n"),
    );
    children.push(spawn("redis-server", [config, "--sentinel"], { stdio: "ignore" }));
    await waitFor(() => sentinelKnowsMaster(sentinelPort, sentinelPassword), 10_000, "the Sentinel");
  } catch (error) {
    await handle.stop();
    throw error;
  }
  return handle;
}

async function answers(port: number, password: string): Promise<boolean> {
  const probe = new Redis({
    host: HOST,
    port,
    password,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on("error", () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

async function sentinelKnowsMaster(port: number, password: string): Promise<boolean> {
  const probe = new Redis({
    host: HOST,
    port,
    password,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on("error", () => {});
  try {
    await probe.connect();
    const address = (await probe.call("SENTINEL", "get-master-addr-by-name", SENTINEL_MASTER_NAME)) as
      | string[]
      | null;
    return Array.isArray(address) && address.length === 2;
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, HOST, () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}
