/**
 * The configuration's say on where Redis is: `redisUrl` (one server), `redis.sentinels`
 * (a master found through Sentinel) or `redis.cluster` (a Redis Cluster), exactly one of
 * them; and how that becomes a RedisTarget. Node lists are `host:port`: credentials and TLS
 * of Sentinel and Cluster nodes are settings of their own (a standalone server's are in its
 * URL), so that no password sits in a list.
 */
import { z } from "zod";
import { settingDocs } from "../../../contract/setting-docs.js";
import type { HostPort, RedisTarget } from "./redis-connection.js";

const HOST_PORT = /^(?:\[([^\]]+)\]|([^:[\]/@\s]+)):(\d{1,5})$/;

const hostPortSchema = z
  .string()
  .refine((value) => parseHostPort(value) !== undefined, "expected host:port (e.g. redis-1:6379)");

export const redisSettingsSchema = z.strictObject({
  /** Sentinels to ask where the master is: a Sentinel deployment. */
  sentinels: z
    .array(hostPortSchema)
    .min(1)
    .optional()
    .register(settingDocs, {
      doc: "Sentinels to ask where the master is (host:port); failovers are followed.",
      example: ["sentinel-1:26379", "sentinel-2:26379", "sentinel-3:26379"],
      env: {
        name: "SANDPOOL_REDIS_SENTINELS",
        description: "Redis Sentinels to find the master through, host:port comma-separated",
      },
    }),
  /** The master group name the Sentinels monitor. */
  sentinelName: z
    .string()
    .min(1)
    .optional()
    .register(settingDocs, {
      doc: "Master name the Sentinels monitor.",
      example: "mymaster",
      env: { name: "SANDPOOL_REDIS_SENTINEL_NAME", description: "master name the Sentinels monitor" },
    }),
  /** Password of the Sentinels themselves (requirepass in sentinel.conf). */
  sentinelPassword: z
    .string()
    .min(1)
    .optional()
    .register(settingDocs, {
      doc: "Password of the Sentinels themselves, when they require one.",
      example: "change-me",
      env: { name: "SANDPOOL_REDIS_SENTINEL_PASSWORD", description: "password of the Sentinels" },
    }),
  /** Seed nodes of a Redis Cluster (any few masters or replicas; the rest are discovered). */
  cluster: z
    .strictObject({
      nodes: z
        .array(hostPortSchema)
        .min(1)
        .register(settingDocs, {
          doc: "Seed nodes (host:port); the others are discovered.",
          example: ["redis-0:6379", "redis-1:6379", "redis-2:6379"],
          env: {
            name: "SANDPOOL_REDIS_CLUSTER_NODES",
            description: "Redis Cluster seed nodes, host:port comma-separated",
          },
        }),
    })
    .optional()
    .register(settingDocs, {
      doc: "A Redis Cluster: sandpool's keys are hash-tagged per workspace or pool.",
    }),
  /** ACL user and password of the master (Sentinel) or of every node (Cluster). */
  username: z
    .string()
    .min(1)
    .optional()
    .register(settingDocs, {
      doc: "ACL user of the Sentinel master or of every Cluster node.",
      example: "sandpool",
      env: {
        name: "SANDPOOL_REDIS_USERNAME",
        description: "ACL user of the Sentinel master or the Cluster nodes",
      },
    }),
  password: z
    .string()
    .min(1)
    .optional()
    .register(settingDocs, {
      doc: "Password of the Sentinel master or of every Cluster node.",
      example: "change-me",
      env: {
        name: "SANDPOOL_REDIS_PASSWORD",
        description: "password of the Sentinel master or the Cluster nodes",
      },
    }),
  /** TLS to every Sentinel and node (the standalone form says rediss:// instead). */
  tls: z
    .boolean()
    .optional()
    .register(settingDocs, {
      doc: "TLS to every Sentinel and node.",
      example: false,
      env: { name: "SANDPOOL_REDIS_TLS", description: "TLS to the Sentinels and nodes (true/false)" },
    }),
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
