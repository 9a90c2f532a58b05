import { describe, expect, it } from "vitest";
import { missingForServe } from "../../../src/cli/run-serve.js";

describe("missingForServe", () => {
  it("names Postgres and every way to give Redis when neither is configured", () => {
    expect(missingForServe({ redisConfigured: false })).toEqual([
      "DATABASE_URL (Postgres, for policy and usage)",
      "REDIS_URL (Redis, for the shared pool, quotas and jobs; or SANDPOOL_REDIS_SENTINELS, or SANDPOOL_REDIS_CLUSTER_NODES)",
    ]);
  });

  it("asks a node for Redis only: it uses no Postgres", () => {
    expect(missingForServe({ redisConfigured: true, role: "node" })).toEqual([]);
    expect(missingForServe({ redisConfigured: false, role: "node" })).toEqual([
      expect.stringMatching(/^REDIS_URL/),
    ]);
    expect(missingForServe({ redisConfigured: true, role: "edge" })).toEqual([
      "DATABASE_URL (Postgres, for policy and usage)",
    ]);
  });

  it("asks for nothing once both are there", () => {
    expect(missingForServe({ databaseUrl: "postgres://db/sandpool", redisConfigured: true })).toEqual([]);
  });
});
