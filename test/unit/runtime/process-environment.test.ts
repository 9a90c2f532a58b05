import { describe, expect, it } from "vitest";
import { processSandboxEnvironment } from "../../../src/runtime/process/process-runtime.js";

describe("the process runtime's sandbox environment", () => {
  it("passes what a server needs and none of the gateway's secrets", () => {
    const env = processSandboxEnvironment({
      PATH: "/usr/bin",
      HOME: "/home/me",
      SANDPOOL_JWT_SECRET: "k",
      DATABASE_URL: "postgres://u:p@h/d",
      REDIS_URL: "redis://h",
      AWS_SECRET_ACCESS_KEY: "x",
    });
    expect(env).toEqual({ PATH: "/usr/bin", HOME: "/home/me", SANDPOOL_LOG_LEVEL: "warn" });
  });
});
