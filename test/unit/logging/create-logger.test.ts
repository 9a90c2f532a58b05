import { describe, expect, it } from "vitest";
import { createLogger } from "../../../src/logging/create-logger.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = { write: (line: string) => lines.push(JSON.parse(line)) };
  return { lines, log: createLogger("test", "info", destination) };
}

describe("createLogger", () => {
  it("never writes a bearer token", () => {
    const { lines, log } = capture();
    log.info({ headers: { authorization: "Bearer secret.token" } }, "request");
    expect(JSON.stringify(lines[0])).not.toContain("secret.token");
  });
});
