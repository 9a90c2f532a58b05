import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import { describe, expect, it } from "vitest";
import { answersWritten } from "../../../src/deferred/answers-written.js";

describe("answersWritten", () => {
  it("resolves after the turn's microtasks, one promise for the turn, a new one after", async () => {
    const order: string[] = [];
    const first = answersWritten();
    expect(answersWritten()).toBe(first);
    const done = first.then(() => order.push("written"));
    await Promise.resolve().then(() => order.push("microtask"));
    await done;
    expect(order).toEqual(["microtask", "written"]);
    expect(answersWritten()).not.toBe(first);
  });

  it("runs work after an answer is written and before the client's next request is read", async () => {
    const events: string[] = [];
    let served = 0;
    const server = createServer((_req, res) => {
      const n = ++served;
      events.push(`request ${n}`);
      void answersWritten().then(() => events.push(`after answer ${n}`));
      res.end(String(n));
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      for (let i = 0; i < 3; i++) await (await request(url)).body.text();
      expect(events).toEqual([
        "request 1",
        "after answer 1",
        "request 2",
        "after answer 2",
        "request 3",
        "after answer 3",
      ]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
