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

  it("never writes a call's body nor a secret's value, should either ever be logged", () => {
    const { lines, log } = capture();
    log.info({ args: { body: { value: "ghp_in_args" } } }, "call");
    log.info({ call: { args: { body: { value: "ghp_in_call" } } } }, "call");
    log.info({ body: { value: "ghp_in_body", hosts: ["api.github.com"] } }, "body");
    const written = JSON.stringify(lines);
    for (const value of ["ghp_in_args", "ghp_in_call", "ghp_in_body"]) expect(written).not.toContain(value);
    expect(written).toContain("api.github.com");
  });
});
