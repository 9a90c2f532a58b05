import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { GatewayEnv } from "../../../src/http/gateway-env.js";
import { observeRequest } from "../../../src/http/middleware/observe-request.js";
import { createLogger } from "../../../src/logging/create-logger.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";

describe("observeRequest's logger", () => {
  it("stamps each request's id on the lines of its logger, and only there", async () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger("test", "info", { write: (line: string) => lines.push(JSON.parse(line)) });
    const app = new Hono<GatewayEnv>();
    app.use("*", observeRequest(log, new GatewayMetrics({ processMetrics: false })));
    app.get("/work", async (c) => {
      await Promise.resolve();
      c.get("log").info("inside");
      return c.text("done");
    });

    const offered = await app.request("/work", { headers: { "x-request-id": "req-1" } });
    const generated = await app.request("/work");
    log.info("outside");

    expect(offered.headers.get("x-request-id")).toBe("req-1");
    const generatedId = generated.headers.get("x-request-id");
    expect(generatedId).toMatch(/^[0-9a-f-]{36}$/);
    expect(lines).toMatchObject([
      { msg: "inside", requestId: "req-1", name: "test" },
      { msg: "inside", requestId: generatedId },
      { msg: "outside" },
    ]);
    expect(lines[2]).not.toHaveProperty("requestId");
  });
});
