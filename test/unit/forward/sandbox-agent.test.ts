import { describe, expect, it } from "vitest";
import { isUnixEndpoint, sandboxOrigin, unixEndpoint } from "../../../src/forward/sandbox-agent.js";

describe("sandbox endpoints", () => {
  it("leaves TCP endpoints as they are", () => {
    expect(isUnixEndpoint("http://127.0.0.1:8080")).toBe(false);
    expect(sandboxOrigin("http://127.0.0.1:8080")).toBe("http://127.0.0.1:8080");
  });

  it("spells a socket path as a valid, never-resolved host name, one per socket", () => {
    const path = `/run/sandpool/${"d".repeat(63)}/0123456789abcdef01234567/sandbox.sock`;
    const endpoint = unixEndpoint(path);
    expect(isUnixEndpoint(endpoint)).toBe(true);
    const origin = new URL(sandboxOrigin(endpoint));
    expect(origin.protocol).toBe("http:");
    expect(origin.hostname.endsWith(".sock.invalid")).toBe(true);
    expect(origin.hostname.length).toBeLessThanOrEqual(253);
    for (const label of origin.hostname.split(".")) expect(label.length).toBeLessThanOrEqual(63);
    expect(sandboxOrigin(unixEndpoint(`${path}x`))).not.toBe(origin.origin);
  });
});
