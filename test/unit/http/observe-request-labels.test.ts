import { Hono } from "hono";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { answersWritten } from "../../../src/deferred/answers-written.js";
import type { GatewayEnv } from "../../../src/http/gateway-env.js";
import { observeRequest } from "../../../src/http/middleware/observe-request.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";

describe("observeRequest labels", () => {
  it("counts a forged sandbox code and an odd status under fixed label values", async () => {
    const metrics = new GatewayMetrics({ processMetrics: false });
    const app = new Hono<GatewayEnv>();
    app.use("*", observeRequest(pino({ level: "silent" }), metrics));
    // What a hostile sandbox could answer through a pass-through route.
    app.get("/forged", (c) => c.json({ detail: { code: "sandbox.pwned-0001", message: "x" } }, 403));
    app.get("/odd", (c) => c.json({ detail: { code: "file.not_found" } }, 599 as 500));
    app.get("/known", (c) => c.json({ detail: { code: "file.too_large", message: "x" } }, 413));

    for (const path of ["/forged", "/odd", "/known"]) await app.request(path);
    // A request is counted once its answer is written, off the time its client waits.
    await answersWritten();

    const text = await metrics.registry.metrics();
    expect(text).not.toContain("sandbox.pwned");
    expect(text).toMatch(/sandpool_rejections_total\{code="sandbox\.other"\} 1/);
    expect(text).toMatch(/sandpool_rejections_total\{code="file\.too_large"\} 1/);
    expect(text).toMatch(/sandpool_http_requests_total\{route="unmatched",method="GET",status="other"\} 1/);
    expect(text).not.toContain('status="599"');
  });
});
