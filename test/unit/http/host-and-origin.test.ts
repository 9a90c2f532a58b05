import { describe, expect, it } from "vitest";
import {
  hostnameOf,
  isAllowedHost,
  isAllowedOrigin,
  isLoopbackName,
} from "../../../src/http/middleware/host-and-origin.js";

describe("Host allow-list", () => {
  it.each([
    "localhost",
    "localhost:8080",
    "LOCALHOST.",
    "app.localhost:3000",
    "127.0.0.1",
    "127.0.0.1:8080",
    "127.1.2.3:1",
    "[::1]",
    "[::1]:8080",
    // IP addresses: a DNS-rebinding page has a name, never an address (probes use pod IPs)
    "10.1.2.3:8080",
    "[fd00::5]:80",
    "0x7f.1", // normalized to 127.0.0.1, as a browser would
  ])("always answers %s", (host) => {
    expect(isAllowedHost(host, [])).toBe(true);
  });

  it.each([
    "evil.example",
    "evil.example:8080",
    "localhost.evil.example",
    "127.0.0.1.nip.io",
    "sandpool.internal",
    "",
    "a b",
    "user@localhost",
    "localhost/path",
    "localhost:port",
    "[::1",
  ])("refuses %j by default", (host) => {
    expect(isAllowedHost(host, [])).toBe(false);
  });

  it("answers configured names, domains and *", () => {
    expect(isAllowedHost("sandpool.internal:8080", ["sandpool.internal"])).toBe(true);
    expect(isAllowedHost("SANDPOOL.internal", ["sandpool.internal"])).toBe(true);
    expect(isAllowedHost("other.internal", ["sandpool.internal"])).toBe(false);
    expect(isAllowedHost("svc.cluster.local", [".svc.cluster.local"])).toBe(true);
    expect(isAllowedHost("sandpool.ns.svc.cluster.local", [".svc.cluster.local"])).toBe(true);
    expect(isAllowedHost("evilsvc.cluster.local", [".svc.cluster.local"])).toBe(false);
    expect(isAllowedHost("anything.example", ["*"])).toBe(true);
    expect(isAllowedHost("bad host", ["*"])).toBe(false);
  });

  it("reads host names as a URL parser does", () => {
    expect(hostnameOf("Example.COM.:80")).toBe("example.com");
    expect(hostnameOf("[0:0::1]")).toBe("[::1]");
    expect(hostnameOf("a@b")).toBeUndefined();
    expect(isLoopbackName("128.0.0.1")).toBe(false);
    expect(isLoopbackName("[::2]")).toBe(false);
  });
});

describe("Origin check", () => {
  it.each([
    "http://localhost:3000",
    "https://localhost",
    "http://127.0.0.1:8080",
    "http://[::1]:5173",
    "http://app.localhost",
  ])("allows the loopback origin %s", (origin) => {
    expect(isAllowedOrigin(origin, [])).toBe(true);
  });

  it.each([
    "null",
    "https://evil.example",
    "http://10.0.0.1",
    "file://",
    "https://localhost.evil.example",
    "https://evil.example/path",
    "",
  ])("refuses %j by default", (origin) => {
    expect(isAllowedOrigin(origin, [])).toBe(false);
  });

  it("allows configured origins exactly, or any with *", () => {
    const allowed = ["https://console.example:8443"];
    expect(isAllowedOrigin("https://console.example:8443", allowed)).toBe(true);
    expect(isAllowedOrigin("https://CONSOLE.example:8443", allowed)).toBe(true);
    expect(isAllowedOrigin("http://console.example:8443", allowed)).toBe(false);
    expect(isAllowedOrigin("https://console.example", allowed)).toBe(false);
    expect(isAllowedOrigin("https://default-port.example:443", ["https://default-port.example"])).toBe(true);
    expect(isAllowedOrigin("null", ["*"])).toBe(true);
  });
});
