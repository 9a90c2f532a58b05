/**
 * Where Redis is and how to open connections to it: one standalone server (a URL), a
 * Sentinel-watched master, or a Redis Cluster. Everything else talks to a `RedisClient`,
 * which is an ioredis `Redis` or `Cluster`: both run the same commands, scripts and pub/sub,
 * and on a Cluster ioredis sends each command to the master of its key's slot (every key
 * sandpool uses is hash-tagged so that a script's keys share one slot).
 *
 * Three kinds of connection are made, each with the settings its use needs:
 * - `commands`: the coordination store's. Redis away must fail a request fast (503
 *   `store.unavailable`), so the offline queue is off and every command has a timeout.
 * - `subscriber`: a subscribed connection can do nothing else; its offline queue is on, so
 *   subscriptions are replayed after a reconnect.
 * - `jobs`: BullMQ's. Its blocking commands need retries without a cap.
 */
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import { CoalescingRedis } from "./coalescing-redis.js";

export interface HostPort {
  host: string;
  port: number;
}

export type RedisTarget =
  | { kind: "standalone"; url: string }
  | {
      kind: "sentinel";
      sentinels: HostPort[];
      /** The master group name the sentinels watch. */
      name: string;
      sentinelPassword?: string;
      username?: string;
      password?: string;
      tls: boolean;
    }
  | { kind: "cluster"; nodes: HostPort[]; username?: string; password?: string; tls: boolean };

export type RedisClient = Redis | Cluster;
export type RedisRole = "commands" | "subscriber" | "jobs";

/** The target for messages and logs: never a password. */
export function describeRedisTarget(target: RedisTarget): string {
  const list = (nodes: HostPort[]) => nodes.map(({ host, port }) => `${host}:${port}`).join(",");
  switch (target.kind) {
    case "standalone":
      return redactUrl(target.url);
    case "sentinel":
      return `sentinel master '${target.name}' via ${list(target.sentinels)}${target.tls ? " (TLS)" : ""}`;
    case "cluster":
      return `cluster via ${list(target.nodes)}${target.tls ? " (TLS)" : ""}`;
  }
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(unparsable URL)";
  }
}

export interface OpenOptions {
  /** Per-command timeout of a `commands` connection. */
  commandTimeoutMs?: number;
}

/**
 * A new client for `role`: the `jobs` one connects by itself, as BullMQ expects; the others
 * wait for `connectRedis` (or, for the subscriber, its first command).
 */
export function openRedis(target: RedisTarget, role: RedisRole, options: OpenOptions = {}): RedisClient {
  const perNode = nodeOptions(role, options);
  // The store's commands of one turn leave in one write (coalescing-redis.ts).
  const Client = role === "commands" ? CoalescingRedis : Redis;
  switch (target.kind) {
    case "standalone":
      return new Client(target.url, { ...perNode, ...offlineQueue(role), ...retry });
    case "sentinel":
      return new Client({
        ...perNode,
        ...offlineQueue(role),
        ...retry,
        ...credentials(target),
        sentinels: target.sentinels,
        name: target.name,
        sentinelPassword: target.sentinelPassword,
        ...(target.tls ? { tls: {}, enableTLSForSentinelMode: true, sentinelTLS: {} } : {}),
        sentinelRetryStrategy: retry.retryStrategy,
      });
    case "cluster":
      return new Cluster(target.nodes, {
        lazyConnect: role !== "jobs",
        ...offlineQueue(role),
        // Keep trying forever, never more than a second apart, like the standalone client.
        clusterRetryStrategy: retry.retryStrategy,
        // Without it a node that restarts with the same slots (no MOVED follows) stays gone.
        clusterNodeRetryStrategy: retry.retryStrategy,
        ...(role === "commands" ? { ...failFastOnCluster, ...autoPipelining } : {}),
        redisOptions: { ...perNode, ...credentials(target), ...(target.tls ? { tls: {} } : {}) },
      } satisfies ClusterOptions);
  }
}

/**
 * Connects `client`, rejecting with a message that names the target (never its password)
 * and the last error seen. Bounded in time: a client that retries on its own (through
 * Sentinels, or over a Cluster's nodes) would otherwise wait forever at start-up.
 */
export async function connectRedis(
  client: RedisClient,
  target: RedisTarget,
  timeoutMs = 10_000,
): Promise<void> {
  let lastError: Error | undefined;
  let lastNodeError: Error | undefined; // a Cluster reports its nodes' errors apart
  const remember = (error: Error) => {
    lastError = error;
  };
  const rememberNode = (error: Error) => {
    lastNodeError = error;
  };
  client.on("error", remember);
  client.on("node error", rememberNode);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${lastError?.message ?? "no answer"} (gave up after ${timeoutMs / 1_000} s)`)),
      timeoutMs,
    );
  });
  try {
    await Promise.race([client.connect(), deadline]);
  } catch (error) {
    client.disconnect();
    const message = (error as Error).message;
    // "Connection is closed." or a Cluster's "None of startup nodes is available" says
    // little; the error behind it (WRONGPASS, a certificate refused) says why.
    const behind = lastNodeError ?? lastError;
    const why = behind && !message.includes(behind.message) ? ` (${behind.message})` : "";
    throw new Error(`cannot reach Redis at ${describeRedisTarget(target)}: ${message}${why}`);
  } finally {
    clearTimeout(timer);
    client.off("error", remember);
    client.off("node error", rememberNode);
  }
}

/**
 * Every key matching `pattern`, from every master: SCAN walks one server's keyspace, and
 * on a Cluster each master holds only its own slots.
 */
export async function scanKeys(client: RedisClient, pattern: string, count = 500): Promise<string[]> {
  const servers = client instanceof Cluster ? client.nodes("master") : [client];
  const keys: string[] = [];
  for (const server of servers) {
    let cursor = "0";
    do {
      const [next, batch] = await server.scan(cursor, "MATCH", pattern, "COUNT", count);
      keys.push(...batch);
      cursor = next;
    } while (cursor !== "0");
  }
  return keys;
}

/**
 * The connection to PUBLISH on `channel` through. A Cluster sends a keyless command such as
 * PUBLISH to any node, and messages published on different nodes reach a subscriber over
 * different links of the cluster bus, out of order; so a channel's messages all go through
 * one master, chosen by the channel's name.
 */
export function publisherFor(client: RedisClient, channel: string): RedisClient {
  if (!(client instanceof Cluster)) return client;
  const masters = client.nodes("master").sort((a, b) => nodeName(a).localeCompare(nodeName(b)));
  if (masters.length === 0) return client; // not ready: the Cluster itself fails fast
  let hash = 0;
  for (const char of channel) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return masters[hash % masters.length]!;
}

function nodeName(node: Redis): string {
  return `${node.options.host}:${node.options.port}`;
}

const retry = { retryStrategy: (attempt: number) => Math.min(attempt * 100, 1_000) };

/**
 * A Cluster retries a command whose node went away (every `retryDelayOnFailover` ms, up to
 * `maxRedirections` times): few and short, so a lost cluster still fails within the
 * command timeout's order, as a lost server does.
 */
const failFastOnCluster = {
  retryDelayOnFailover: 100,
  retryDelayOnClusterDown: 100,
  retryDelayOnTryAgain: 100,
  maxRedirections: 6,
  slotsRefreshTimeout: 1_000,
} satisfies ClusterOptions;

/**
 * On a Cluster, the store's commands issued in one turn of the event loop (concurrent calls'
 * scripts) go out in one write per node: on loopback a socket write costs more than the rest
 * of a small command's client-side work, and each call makes two. Order per connection is
 * kept, and so is the command count Redis sees (a pipeline's commands count one each). A
 * single server's connection does the same, more cheaply (coalescing-redis.ts).
 */
const autoPipelining = { enableAutoPipelining: true } as const;

function nodeOptions(role: RedisRole, options: OpenOptions): RedisOptions {
  // BullMQ connects its connection itself, and waits for it to be ready.
  const common: RedisOptions = { lazyConnect: role !== "jobs", connectTimeout: 2_000 };
  // The command timeout is long enough for a reply held up by this process's own stall (a busy
  // loop, a GC pause: see sandpool_event_loop_delay_seconds), short enough that a hung Redis
  // fails calls fast. A Redis that is gone fails them at once (no offline queue).
  if (role === "commands")
    return {
      ...common,
      maxRetriesPerRequest: 1,
      commandTimeout: options.commandTimeoutMs ?? 2_000,
    };
  return { ...common, maxRetriesPerRequest: null };
}

function offlineQueue(role: RedisRole): { enableOfflineQueue: boolean } {
  return { enableOfflineQueue: role !== "commands" };
}

function credentials(target: { username?: string; password?: string }): RedisOptions {
  return {
    ...(target.username ? { username: target.username } : {}),
    ...(target.password ? { password: target.password } : {}),
  };
}
