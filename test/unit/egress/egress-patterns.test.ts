import { describe, expect, it } from "vitest";
import {
  cidrProblem,
  cidrWithin,
  embeddedIpv4,
  hostMatchesPattern,
  hostPatternProblem,
  hostPatternWithin,
  ipv6Hextets,
} from "../../../src/policy-schema/egress-patterns.js";

describe("CIDR syntax", () => {
  it.each(["10.1.0.0/16", "0.0.0.0/0", "8.8.8.8/32", "2001:db8::/32", "::/0", "fe80::/10", "::1/128"])(
    "accepts %s",
    (text) => expect(cidrProblem(text)).toBeUndefined(),
  );
  it.each([
    "10.1.0.0",
    "10.1.0.0/33",
    "10.1.0/16",
    "010.1.0.0/16",
    "10.1.0.0/-1",
    "10.1.0.0/ 8",
    "2001:db8::/129",
    "fe80::1%eth0/64",
    "example.com/24",
    "",
    "/8",
  ])("refuses %s", (text) => expect(cidrProblem(text)).toMatch(/not a CIDR range/));
  it("refuses an IPv4-mapped range (it would match nothing: mapped addresses are checked as IPv4)", () => {
    expect(cidrProblem("::ffff:10.0.0.0/104")).toMatch(/IPv4 form/);
  });
});

describe("host-name patterns", () => {
  it.each(["pypi.org", "*.pythonhosted.org", "localhost", "a-b.example.com", "*.com", "PyPI.org"])(
    "accepts %s",
    (pattern) => expect(hostPatternProblem(pattern)).toBeUndefined(),
  );
  it.each([
    "",
    "*",
    "*.",
    "a.*.example.com",
    "*example.com",
    "-a.example.com",
    "a-.example.com",
    "a..example.com",
    ".example.com",
    "exa mple.com",
    "example.com/path",
    "example.com:443",
    "a.123",
    `${"a".repeat(64)}.com`,
    `${"a.".repeat(127)}com`,
  ])("refuses %s", (pattern) => expect(hostPatternProblem(pattern)).toBeDefined());
  it("refuses addresses, pointing at CIDR ranges", () => {
    expect(hostPatternProblem("10.0.0.1")).toMatch(/CIDR/);
    expect(hostPatternProblem("::1")).toMatch(/CIDR/);
  });
  it("matches exact names and names below a wildcard", () => {
    expect(hostMatchesPattern("pypi.org", "pypi.org")).toBe(true);
    expect(hostMatchesPattern("a.pypi.org", "*.pypi.org")).toBe(true);
    expect(hostMatchesPattern("pypi.org", "*.pypi.org")).toBe(false);
    expect(hostMatchesPattern("xpypi.org", "*.pypi.org")).toBe(false);
  });
});

describe("the deployment ceiling", () => {
  it("a range is within a ceiling when one ceiling range holds all of it", () => {
    expect(cidrWithin("10.1.0.0/16", ["10.0.0.0/8"])).toBe(true);
    expect(cidrWithin("10.1.2.3/32", ["10.1.0.0/16"])).toBe(true);
    expect(cidrWithin("10.0.0.0/8", ["10.0.0.0/8"])).toBe(true);
    expect(cidrWithin("10.0.0.0/7", ["10.0.0.0/8"])).toBe(false);
    expect(cidrWithin("11.0.0.0/16", ["10.0.0.0/8"])).toBe(false);
    expect(cidrWithin("fd00:1::/32", ["fd00::/8"])).toBe(true);
    expect(cidrWithin("10.0.0.0/8", ["::/0"])).toBe(false);
    expect(cidrWithin("10.0.0.0/8", [])).toBe(false);
  });
  it("a host pattern is within a ceiling when everything it matches is matched there", () => {
    expect(hostPatternWithin("pypi.org", ["pypi.org"])).toBe(true);
    expect(hostPatternWithin("files.pythonhosted.org", ["*.pythonhosted.org"])).toBe(true);
    expect(hostPatternWithin("*.pythonhosted.org", ["*.pythonhosted.org"])).toBe(true);
    expect(hostPatternWithin("*.a.pythonhosted.org", ["*.pythonhosted.org"])).toBe(true);
    expect(hostPatternWithin("pythonhosted.org", ["*.pythonhosted.org"])).toBe(false);
    expect(hostPatternWithin("*.org", ["*.pythonhosted.org"])).toBe(false);
    expect(hostPatternWithin("*.pypi.org", ["pypi.org"])).toBe(false);
    expect(hostPatternWithin("evilpythonhosted.org", ["*.pythonhosted.org"])).toBe(false);
  });
});

describe("IPv6 parsing", () => {
  it("expands every spelling to eight groups", () => {
    expect(ipv6Hextets("::")).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(ipv6Hextets("::1")).toEqual([0, 0, 0, 0, 0, 0, 0, 1]);
    expect(ipv6Hextets("1::")).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    expect(ipv6Hextets("::ffff:1.2.3.4")).toEqual([0, 0, 0, 0, 0, 0xffff, 0x102, 0x304]);
    expect(ipv6Hextets("::1.2.3.4")).toEqual([0, 0, 0, 0, 0, 0, 0x102, 0x304]);
    expect(ipv6Hextets("1:2:3:4:5:6:1.2.3.4")).toEqual([1, 2, 3, 4, 5, 6, 0x102, 0x304]);
    expect(ipv6Hextets("fe80::1%eth0")).toEqual([0xfe80, 0, 0, 0, 0, 0, 0, 1]);
    expect(ipv6Hextets("10.0.0.1")).toBeUndefined();
  });
  it("finds the IPv4 address an IPv6 form carries", () => {
    expect(embeddedIpv4("::ffff:a00:1")).toEqual({ kind: "mapped", ipv4: "10.0.0.1" });
    expect(embeddedIpv4("::ffff:0:a00:1")).toEqual({ kind: "translated", ipv4: "10.0.0.1" });
    expect(embeddedIpv4("64:ff9b::a9fe:a9fe")).toEqual({ kind: "nat64", ipv4: "169.254.169.254" });
    expect(embeddedIpv4("::10.0.0.1")).toEqual({ kind: "compatible", ipv4: "10.0.0.1" });
    expect(embeddedIpv4("::1")).toBeUndefined();
    expect(embeddedIpv4("2001:db8::1")).toBeUndefined();
  });
});
