/**
 * The configuration's say on where Redis is: `redisUrl` (one server), `redis.sentinels`
 * (a master found through Sentinel) or `redis.cluster` (a Redis Cluster), exactly one of
 * them; and how that becomes a RedisTarget. Node lists are `host:port`: credentials and TLS
 * of Sentinel and Cluster nodes are settings of their own (a standalone server's are in its
 * URL), so that no password sits in a list.
 */
import { z } from "zod";
import type { HostPort, RedisTarget } from "./redis-connection.js";

const HOST_PORT = /^(?:\[([^\]]+)\]|([^:[\]/@\s]+)):(\d{1,5})$/;

const hostPortSchema = z
  .string()
  .refine((value) => parseHostPort(value) !== undefined, "expected host:port (e.g. redis-1:6379)");

export const redisSettingsSchema = z.strictObject({
  /** Sentinels to ask where the master is: a Sentinel deployment. */
  sentinels: z.array(hostPortSchema).min(1).optional(),
  /** The master group name the Sentinels monitor. */
  sentinelName: z.string().min(1).optional(),
  /** Password of the Sentinels themselves (requirepass in sentinel.conf). */
  sentinelPassword: z.string().min(1).optional(),
  /** Seed nodes of a Redis Cluster (any few masters or replicas; the rest are discovered). */
  cluster: z.strictObject({ nodes: z.array(hostPortSchema).min(1) }).optional(),
  /** ACL user and password of the master (Sentinel) or of every node (Cluster). */
  username: z.string().min(1).optional(),
  password: z.string().min(1).optional(),
  /** TLS to every Sentinel and node (the standalone form says rediss:// instead). */
  tls: z.boolean().optional(),
});

export type RedisSettings = z.output<typeof redisSettingsSchema>;

interface Issue {
  message: string;
  path: (string | number)[];
}

/** What is wrong with the choice of Redis: none, or one of the three forms, complete. */
export function redisSettingsIssues(redisUrl: string | undefined, redis: RedisSettings | undefined): Issue[] {
  if (!redis) return [];
  const issues: Issue[] = [];
  const forms = [
    redisUrl && "redisUrl",
    redis.sentinels && "redis.sentinels",
    redis.cluster && "redis.cluster",
  ];
  const chosen = forms.filter(Boolean);
  if (chosen.length > 1)
    issues.push({
      message: `set one of redisUrl (one server), redis.sentinels (Sentinel) or redis.cluster (Cluster), not ${chosen.join(" and ")}`,
      path: [], // about three keys, two of them in redis: no single one is the culprit
    });
  if (redis.sentinels && !redis.sentinelName)
    issues.push({
      message: "required with redis.sentinels: the master name they monitor",
      path: ["redis", "sentinelName"],
    });
  for (const key of ["sentinelName", "sentinelPassword"] as const) {
    if (redis[key] !== undefined && !redis.sentinels)
      issues.push({ message: "only applies with redis.sentinels", path: ["redis", key] });
  }
  if (!redis.sentinels && !redis.cluster) {
    for (const key of ["username", "password", "tls"] as const) {
      if (redis[key] !== undefined)
        issues.push({
          message:
            "applies to redis.sentinels or redis.cluster; one server's credentials and TLS go in redisUrl",
          path: ["redis", key],
        });
    }
  }
  return issues;
}

/** The Redis a checked configuration points at, or undefined when it names none (dev mode). */
export function redisTargetFrom(config: {
  redisUrl?: string;
  redis?: RedisSettings;
}): RedisTarget | undefined {
  const { redisUrl, redis } = config;
  const auth = { username: redis?.username, password: redis?.password, tls: redis?.tls ?? false };
  if (redis?.cluster) return { kind: "cluster", nodes: redis.cluster.nodes.map(hostPort), ...auth };
  if (redis?.sentinels) {
    return {
      kind: "sentinel",
      sentinels: redis.sentinels.map(hostPort),
      name: redis.sentinelName!,
      sentinelPassword: redis.sentinelPassword,
      ...auth,
    };
  }
  return redisUrl ? { kind: "standalone", url: redisUrl } : undefined;
}

/** `host:port` (or `[v6]:port`) -> its parts, or undefined for anything else. */
export function parseHostPort(value: string): HostPort | undefined {
  const match = HOST_PORT.exec(value.trim());
  const port = Number(match?.[3]);
  if (!match || port < 1 || port > 65_535) return undefined;
  return { host: (match[1] ?? match[2])!, port };
}

function hostPort(value: string): HostPort {
  const parsed = parseHostPort(value);
  if (!parsed) throw new Error(`expected host:port, got '${value}'`);
  return parsed;
}
