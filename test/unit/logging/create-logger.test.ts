import { describe, expect, it } from "vitest";
import { createLogger } from "../../../src/logging/create-logger.js";
import { runInRequest } from "../../../src/logging/request-context.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = { write: (line: string) => lines.push(JSON.parse(line)) };
  return { lines, log: createLogger("test", "info", destination) };
}

describe("createLogger", () => {
  it("stamps the request id on lines written while a request is served, by anyone", async () => {
    const { lines, log } = capture();
    await runInRequest("req-1", async () => {
      await Promise.resolve();
      log.info("inside");
    });
    log.info("outside");
    expect(lines[0]).toMatchObject({ msg: "inside", requestId: "req-1", name: "test" });
    expect(lines[1]).not.toHaveProperty("requestId");
  });

  it("never writes a bearer token", () => {
    const { lines, log } = capture();
    log.info({ headers: { authorization: "Bearer secret.token" } }, "request");
    expect(JSON.stringify(lines[0])).not.toContain("secret.token");
  });
});
