/**
 * renderOutcome over a real Node server (listen(), @hono/node-server): a raw outcome goes out
 * with exactly its headers and bytes, answer after answer, even when outcomes share one
 * headers object (a constant such as the event-stream headers), which the adapter must not
 * carry from one answer into the next (it adds Content-Length to the record it writes).
 */
import { Hono } from "hono";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, type RunningServer } from "../../../src/http/common/listen.js";
import { renderOutcome } from "../../../src/http/common/render-outcome.js";

const SHARED_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-store" };

describe("a raw outcome as the HTTP answer", () => {
  let server: RunningServer;

  beforeAll(async () => {
    const app = new Hono();
    app.get("/bytes/:n", (c) =>
      renderOutcome(c, {
        kind: "raw",
        status: 200,
        headers: SHARED_HEADERS,
        body: "x".repeat(Number(c.req.param("n"))),
      }),
    );
    server = await listen(app, { host: "127.0.0.1", port: 0 });
  });
  afterAll(() => server?.close());

  it("answers each with its own length and all its bytes, however the lengths vary", async () => {
    for (const n of [10, 1_000, 3, 50_000, 0, 7]) {
      const answer = await request(`${server.url}/bytes/${n}`);
      expect(answer.statusCode).toBe(200);
      expect(answer.headers["content-type"]).toBe("text/event-stream");
      expect(answer.headers["cache-control"]).toBe("no-store");
      expect(answer.headers["content-length"]).toBe(String(n));
      expect((await answer.body.text()).length).toBe(n);
    }
    expect(SHARED_HEADERS).toEqual({ "content-type": "text/event-stream", "cache-control": "no-store" });
  });
});
