import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { type GatewayConfigInput, gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import { loadGatewayConfig } from "../../../src/config/load-config.js";
import { redisTargetFrom } from "../../../src/store/coordination/redis/redis-config.js";
import { problemsOf } from "./config-problems.js";

const IMAGE = "img/a";

function parse(redis: Pick<GatewayConfigInput, "redisUrl" | "redis">) {
  return gatewayConfigSchema.safeParse({
    auth: { jwtSecret: "0123456789abcdef0123456789abcdef" },
    policy: { allowedImages: [IMAGE], defaultImage: IMAGE },
    pools: [{ name: "a", image: IMAGE }],
    ...redis,
  });
}

function problems(redis: Pick<GatewayConfigInput, "redisUrl" | "redis">): string[] {
  const result = parse(redis);
  expect(result.success, "expected the configuration to be refused").toBe(false);
  return result.error!.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
}

function target(redis: Pick<GatewayConfigInput, "redisUrl" | "redis">) {
  const result = parse(redis);
  expect(result.error?.issues).toBeUndefined();
  return redisTargetFrom(result.data!);
}

describe("where Redis is: redisUrl, redis.sentinels or redis.cluster", () => {
  it("a URL is one server, TLS and credentials in it", () => {
    expect(target({ redisUrl: "rediss://:pw@redis.example:6380/2" })).toEqual({
      kind: "standalone",
      url: "rediss://:pw@redis.example:6380/2",
    });
  });

  it("Sentinels find the master by name, with their own password and the master's", () => {
    expect(
      target({
        redis: {
          sentinels: ["s-1:26379", "[fd00::2]:26379"],
          sentinelName: "mymaster",
          sentinelPassword: "sp",
          password: "mp",
          tls: true,
        },
      }),
    ).toEqual({
      kind: "sentinel",
      sentinels: [
        { host: "s-1", port: 26379 },
        { host: "fd00::2", port: 26379 },
      ],
      name: "mymaster",
      sentinelPassword: "sp",
      username: undefined,
      password: "mp",
      tls: true,
    });
  });

  it("a Cluster is reached through its seed nodes, TLS off unless asked", () => {
    expect(target({ redis: { cluster: { nodes: ["redis-0:6379"] }, username: "u", password: "p" } })).toEqual(
      {
        kind: "cluster",
        nodes: [{ host: "redis-0", port: 6379 }],
        username: "u",
        password: "p",
        tls: false,
      },
    );
  });

  it("none at all is dev mode's in-memory store", () => {
    expect(target({})).toBeUndefined();
  });

  it("refuses two forms at once, naming both", () => {
    expect(problems({ redisUrl: "redis://r:6379", redis: { cluster: { nodes: ["r:6379"] } } })).toEqual([
      ": set one of redisUrl (one server), redis.sentinels (Sentinel) or redis.cluster (Cluster), not redisUrl and redis.cluster",
    ]);
  });

  it("refuses Sentinels without the master name, and Sentinel settings without Sentinels", () => {
    expect(problems({ redis: { sentinels: ["s:26379"] } })).toEqual([
      "redis.sentinelName: required with redis.sentinels: the master name they monitor",
    ]);
    expect(problems({ redisUrl: "redis://r", redis: { sentinelPassword: "x" } })).toEqual([
      "redis.sentinelPassword: only applies with redis.sentinels",
    ]);
  });

  it("refuses credentials beside a URL: they belong in it", () => {
    expect(problems({ redisUrl: "redis://r", redis: { password: "p" } })).toEqual([
      "redis.password: applies to redis.sentinels or redis.cluster; one server's credentials and TLS go in redisUrl",
    ]);
  });

  it.each(["redis-0", "redis://redis-0:6379", ":6379", "h:0", "h:70000", "u:p@h:6379"])(
    "refuses the node '%s': host:port only",
    (node) => {
      expect(problems({ redis: { cluster: { nodes: [node] } } })).toEqual([
        "redis.cluster.nodes.0: expected host:port (e.g. redis-1:6379)",
      ]);
    },
  );

  it("refuses an unknown key with a suggestion", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "sandpool-redis-config-"));
    try {
      const file = path.join(dir, "sandpool.yaml");
      writeFileSync(
        file,
        `auth: { jwtSecret: "0123456789abcdef0123456789abcdef" }\nredis: { sentinel: ["s:26379"], sentinelName: m }\n`,
      );
      expect(problemsOf(() => loadGatewayConfig({ file, env: {} }))).toContain(
        "redis.sentinel: unknown key, did you mean 'sentinels'?",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
