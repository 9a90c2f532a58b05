/**
 * A throw-away Redis master and its replica, watched by one Sentinel, all on free loopback
 * ports and password-protected (so the credentials of each reach the right server). Killing
 * the master makes the Sentinel promote the replica within a few seconds. The servers die
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
  /** The current master's own port (a direct client for checks). */
  masterPort(): Promise<number>;
  masterPassword: string;
  /** Kills the current master (SIGKILL): the Sentinel then promotes the replica. */
  killMaster(): Promise<void>;
  stop(): Promise<void>;
}

export async function startRedisSentinel(): Promise<RedisSentinelHandle> {
  const root = await mkdtemp(path.join(tmpdir(), "sandpool-redis-sentinel-"));
  const masterPort = await freePort();
  const replicaPort = await freePort();
  const sentinelPort = await freePort();
  const masterPassword = `master-${process.pid}`;
  const sentinelPassword = `sentinel-${process.pid}`;
  const children: ChildProcess[] = [];
  const servers = new Map<number, ChildProcess>();
  const killAll = () => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
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
    masterPort: () => masterAddress(sentinelPort, sentinelPassword).then((address) => Number(address![1])),
    masterPassword,
    async killMaster() {
      const server = servers.get(await handle.masterPort());
      if (!server || server.exitCode !== null || server.signalCode !== null) return;
      const exited = new Promise((resolve) => server.once("exit", resolve));
      server.kill("SIGKILL");
      await exited;
    },
    async stop() {
      const exits = children
        .filter((child) => child.exitCode === null && child.signalCode === null)
        .map((child) => new Promise((resolve) => child.once("exit", resolve)));
      killAll();
      await Promise.all(exits);
      process.removeListener("exit", killAll);
      await rm(root, { recursive: true, force: true });
    },
  };

  try {
    for (const port of [masterPort, replicaPort]) {
      const server = spawn(
        "redis-server",
        [
          ...["--bind", HOST, "--port", String(port), "--dir", root, "--dbfilename", `dump-${port}.rdb`],
          ...["--requirepass", masterPassword, "--masterauth", masterPassword],
          ...["--save", "", "--appendonly", "no"],
          ...(port === replicaPort ? ["--replicaof", HOST, String(masterPort)] : []),
        ],
        { stdio: "ignore" },
      );
      children.push(server);
      servers.set(port, server);
      await waitFor(() => answers(port, masterPassword), 10_000, `the Redis server on port ${port}`);
    }
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
        // Quick to call the master down and fail over, so a test can wait for it.
        `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} 1000`,
        `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 5000`,
        "",
      ].join("\n"),
    );
    children.push(spawn("redis-server", [config, "--sentinel"], { stdio: "ignore" }));
    // Ready once the Sentinel names the master and has found its replica.
    await waitFor(
      () => sentinelReady(sentinelPort, sentinelPassword),
      15_000,
      "the Sentinel and its replica",
    );
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

/** What the Sentinel on `port` asks of itself; undefined when it does not answer. */
async function askSentinel(port: number, password: string, ...args: string[]): Promise<unknown> {
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
    return await probe.call("SENTINEL", ...args);
  } catch {
    return undefined;
  } finally {
    probe.disconnect();
  }
}

async function masterAddress(port: number, password: string): Promise<string[] | undefined> {
  const address = await askSentinel(port, password, "get-master-addr-by-name", SENTINEL_MASTER_NAME);
  return Array.isArray(address) && address.length === 2 ? (address as string[]) : undefined;
}

async function sentinelReady(port: number, password: string): Promise<boolean> {
  if (!(await masterAddress(port, password))) return false;
  const replicas = await askSentinel(port, password, "replicas", SENTINEL_MASTER_NAME);
  return Array.isArray(replicas) && replicas.length === 1;
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
