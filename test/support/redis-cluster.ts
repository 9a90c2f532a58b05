/**
 * A throw-away Redis Cluster (three masters, no replicas) on free loopback ports, each
 * `redis-server --cluster-enabled yes` with a temp dir of its own and no persistence, joined
 * by `redis-cli --cluster create`. Start-up is bounded; the servers die with the test
 * process (SIGKILL on exit) if `stop` is never reached.
 *
 *   const available = await redisClusterToolsAvailable();   // CI=true: must be there
 *   const cluster = await startRedisCluster();            // or { tls } for TLS only
 *   ... cluster.target (a RedisTarget for the store and BullMQ), cluster.admin() ...
 *   await cluster.stop();
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Cluster, Redis, type RedisOptions } from "ioredis";
import type { HostPort, RedisTarget } from "../../src/store/coordination/redis/redis-connection.js";
import { type TlsFiles, tlsServerFlags } from "./redis-tls.js";
import { requireService } from "./require-service.js";
import { waitFor } from "./wait-for.js";

const run = promisify(execFile);
const HOST = "127.0.0.1";
/** A cluster node also listens on its port + 10000 (the cluster bus). */
const BUS_OFFSET = 10_000;

export interface RedisClusterHandle {
  nodes: HostPort[];
  target: Extract<RedisTarget, { kind: "cluster" }>;
  /** A plain client of the cluster, for checks and cleanup (disconnect it). */
  admin(): Cluster;
  /** Kills every server (SIGKILL), for tests of Redis being away; `start` brings them back. */
  kill(): Promise<void>;
  /** Restarts the killed servers from their nodes.conf: the same cluster, empty. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** redis-server and redis-cli are installed (CI=true: they must be). */
export function redisClusterToolsAvailable(): Promise<boolean> {
  return requireService(
    "Redis Cluster (redis-server, redis-cli)",
    async () => {
      await run("redis-server", ["--version"], { timeout: 5_000 });
      await run("redis-cli", ["--version"], { timeout: 5_000 });
      return true;
    },
    { start: "apt-get install redis-server (it ships redis-cli)" },
  );
}

export interface RedisClusterOptions {
  masters?: number;
  /** Serve TLS only (clients, and the cluster bus between nodes). */
  tls?: TlsFiles;
  /** The one ACL user clients may log in as (the default user is off). */
  user?: { username: string; password: string };
}

export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisClusterHandle> {
  const { masters = 3, tls, user } = options;
  const root = await mkdtemp(path.join(tmpdir(), "sandpool-redis-cluster-"));
  const ports = await freeClusterPorts(masters);
  // The harness's own clients: the test CA trusted directly (sandpool's code is given none), the user.
  const clientOptions: RedisOptions = {
    ...(tls ? { tls: { ca: readFileSync(tls.caFile) } } : {}),
    ...(user ? { username: user.username, password: user.password } : {}),
  };
  // One argument per word: redis-server reads an argument with spaces as one quoted word.
  const userFlags = user
    ? [
        ...["--user", "default", "off"],
        ...["--user", user.username, "on", `>${user.password}`, "~*", "&*", "+@all"],
      ]
    : [];
  const nodes = ports.map((port) => ({ host: HOST, port }));
  const children = new Map<number, ChildProcess>();
  const killAll = () => {
    for (const child of children.values())
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  process.once("exit", killAll);

  const startServers = async () => {
    for (const port of ports) {
      const child = spawn(
        "redis-server",
        [
          ...["--bind", HOST, "--dir", path.join(root)],
          ...(tls ? [...tlsServerFlags(tls, port), "--tls-cluster", "yes"] : ["--port", String(port)]),
          ...userFlags,
          ...["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`],
          ...["--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no"],
        ],
        { stdio: "ignore" },
      );
      children.set(port, child);
    }
    for (const port of ports)
      await waitFor(() => answers(port, clientOptions), 10_000, `redis-server on port ${port}`);
  };
  const clusterOk = () =>
    Promise.all(ports.map((port) => clusterStateOk(port, clientOptions))).then((all) => all.every(Boolean));

  const handle: RedisClusterHandle = {
    nodes,
    target: { kind: "cluster", nodes, tls: tls !== undefined, ...user },
    admin() {
      const admin = new Cluster(nodes, { redisOptions: { connectTimeout: 2_000, ...clientOptions } });
      admin.on("error", () => {});
      return admin;
    },
    async kill() {
      const exits = [...children.values()]
        .filter((child) => child.exitCode === null && child.signalCode === null)
        .map((child) => new Promise((resolve) => child.once("exit", resolve)));
      killAll();
      await Promise.all(exits);
    },
    async start() {
      await startServers();
      await waitFor(clusterOk, 20_000, "cluster_state:ok after a restart");
    },
    async stop() {
      await handle.kill();
      process.removeListener("exit", killAll);
      await rm(root, { recursive: true, force: true });
    },
  };

  try {
    await startServers();
    await run(
      "redis-cli",
      [
        ...(tls ? ["--tls", "--cacert", tls.caFile] : []),
        ...(user ? ["--user", user.username, "--pass", user.password] : []),
        ...["--cluster", "create", ...ports.map((port) => `${HOST}:${port}`)],
        ...["--cluster-replicas", "0", "--cluster-yes"],
      ],
      { timeout: 30_000, killSignal: "SIGKILL" },
    );
    await waitFor(clusterOk, 30_000, "cluster_state:ok on every node");
  } catch (error) {
    await handle.stop();
    throw error;
  }
  return handle;
}

/** The server on `port` answers PING. */
function answers(port: number, tls: RedisOptions): Promise<boolean> {
  return probe(port, tls, async (client) => (await client.ping()) === "PONG");
}

function clusterStateOk(port: number, tls: RedisOptions): Promise<boolean> {
  return probe(port, tls, async (client) => {
    const info = String(await client.cluster("INFO"));
    return /cluster_state:ok/.test(info) && /cluster_slots_assigned:16384/.test(info);
  });
}

/** `check` on a one-shot client of the server on `port`; false when it cannot connect. */
async function probe(port: number, tls: RedisOptions, check: (client: Redis) => Promise<boolean>) {
  const client = new Redis({
    host: HOST,
    port,
    ...tls,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    return await check(client);
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** `count` ports whose cluster bus port (port + 10000) is free too. */
async function freeClusterPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if (ports.includes(port) || ports.includes(port + BUS_OFFSET) || ports.includes(port - BUS_OFFSET))
      continue;
    if ((await isFree(port)) && (await isFree(port + BUS_OFFSET))) ports.push(port);
  }
  return ports;
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, HOST, () => probe.close(() => resolve(true)));
  });
}
