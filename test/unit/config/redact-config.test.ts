import { describe, expect, it } from "vitest";
import { redactConfig } from "../../../src/cli/commands/config-command.js";

describe("redactConfig", () => {
  it("hides secrets and URL passwords, and nothing else", () => {
    const input = {
      port: 8080,
      databaseUrl: "postgres://sandpool:s3cret@db:5432/sandpool",
      redisUrl: "redis://:pa55@redis:6379/0",
      auth: { jwtSecret: "x".repeat(40), jwksUrl: "https://issuer.example/jwks", algorithms: ["HS256"] },
      runtime: { docker: { hosts: ["tcp://10.0.0.5:2375"], registryPassword: "p", apiToken: "t" } },
      other: "postgres://db/sandpool?sslmode=require&password=q",
    };
    expect(redactConfig(input)).toEqual({
      port: 8080,
      databaseUrl: "postgres://sandpool:redacted@db:5432/sandpool",
      redisUrl: "redis://:redacted@redis:6379/0",
      auth: { jwtSecret: "<redacted>", jwksUrl: "https://issuer.example/jwks", algorithms: ["HS256"] },
      runtime: {
        docker: { hosts: ["tcp://10.0.0.5:2375"], registryPassword: "<redacted>", apiToken: "<redacted>" },
      },
      other: "postgres://db/sandpool?sslmode=require&password=redacted",
    });
  });

  it("hides the secrets key ring, inline or read from its file", () => {
    const keys = `k1:${Buffer.alloc(32, 1).toString("base64")}`;
    expect(JSON.stringify(redactConfig({ secrets: { keys, keysFile: "/run/keys" } }))).not.toContain(keys);
  });

  it("hides the edge/node shared secrets, every one of them", () => {
    expect(redactConfig({ node: { id: "n1", secrets: ["a".repeat(32), "b".repeat(32)] } })).toEqual({
      node: { id: "n1", secrets: "<redacted>" },
    });
  });

  it("leaves a URL without credentials exactly as written", () => {
    expect(redactConfig({ redisUrl: "redis://redis:6379" })).toEqual({ redisUrl: "redis://redis:6379" });
    expect(redactConfig({ host: "127.0.0.1" })).toEqual({ host: "127.0.0.1" });
    expect(redactConfig({ auth: { verifiedTokenCacheSeconds: 60 } })).toEqual({
      auth: { verifiedTokenCacheSeconds: 60 },
    });
  });

  it("hides the Sentinel and Cluster passwords", () => {
    expect(
      redactConfig({
        redis: { sentinels: ["s:26379"], sentinelName: "m", sentinelPassword: "sp", password: "p" },
      }),
    ).toEqual({
      redis: {
        sentinels: ["s:26379"],
        sentinelName: "m",
        sentinelPassword: "<redacted>",
        password: "<redacted>",
      },
    });
  });

  it("does not change its input", () => {
    const input = { auth: { jwtSecret: "s".repeat(32) } };
    redactConfig(input);
    expect(input.auth.jwtSecret).toBe("s".repeat(32));
  });
});
