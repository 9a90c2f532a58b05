/**
 * The egress decision as pure data: every address here is only ever compared, never
 * connected to.
 */
import { describe, expect, it } from "vitest";
import {
  checkAddress,
  checkDestination,
  DEFAULT_DENY_RANGES,
  decideEgress,
  type EgressDenySettings,
  type EgressGrant,
} from "../../../src/egress/egress-rules.js";

const noGrant: EgressGrant = { allowCidrs: [], allowHosts: [] };
const plain: EgressDenySettings = { denyCidrs: [] };

function reasonFor(address: string, grant = noGrant, settings = plain): string | undefined {
  const decision = checkAddress(address, grant, settings);
  return decision.allowed ? undefined : decision.reason;
}

describe("default deny ranges", () => {
  const denied: [string, string][] = [
    ["0.0.0.0", "0.0.0.0/8"],
    ["0.1.2.3", "0.0.0.0/8"],
    ["127.0.0.1", "127.0.0.0/8"],
    ["127.255.255.254", "127.0.0.0/8"],
    ["10.0.0.1", "10.0.0.0/8"],
    ["10.255.255.255", "10.0.0.0/8"],
    ["172.16.0.1", "172.16.0.0/12"],
    ["172.31.255.255", "172.16.0.0/12"],
    ["192.168.1.1", "192.168.0.0/16"],
    ["100.64.0.1", "100.64.0.0/10"],
    ["100.127.255.255", "100.64.0.0/10"],
    ["169.254.169.254", "169.254.0.0/16"],
    ["192.0.0.170", "192.0.0.0/24"],
    ["192.0.2.1", "192.0.2.0/24"],
    ["198.51.100.7", "198.51.100.0/24"],
    ["203.0.113.9", "203.0.113.0/24"],
    ["198.18.0.1", "198.18.0.0/15"],
    ["198.19.255.255", "198.18.0.0/15"],
    ["192.88.99.1", "192.88.99.0/24"],
    ["224.0.0.251", "224.0.0.0/4"],
    ["239.255.255.250", "224.0.0.0/4"],
    ["255.255.255.255", "255.255.255.255/32"],
    ["240.0.0.1", "240.0.0.0/4"],
    ["::", "::/128"],
    ["::1", "::1/128"],
    ["0:0:0:0:0:0:0:1", "::1/128"],
    ["::10.0.0.1", "::/96"],
    ["::ffff:0:10.0.0.1", "::ffff:0:0:0/96"],
    ["64:ff9b:1::1", "64:ff9b:1::/48"],
    ["100::1", "100::/64"],
    ["2001:0:4136:e378::1", "2001::/32"],
    ["2001:db8::1", "2001:db8::/32"],
    ["3fff:fff::1", "3fff::/20"],
    ["2002:a00:1::1", "2002::/16"],
    ["fc00::1", "fc00::/7"],
    ["fd12:3456:789a::1", "fc00::/7"],
    ["fe80::1", "fe80::/10"],
    ["fe80::1%eth0", "fe80::/10"],
    ["febf:ffff::1", "fe80::/10"],
    ["fec0::1", "fec0::/10"],
    ["ff02::1", "ff00::/8"],
  ];
  it.each(denied)("refuses %s, naming %s", (address, cidr) => {
    expect(reasonFor(address)).toContain(`(${cidr})`);
    expect(reasonFor(address)).toMatch(new RegExp(`^${address.replace(/[.%]/g, "\\$&")} `));
  });

  it("says what kind of range it is", () => {
    expect(reasonFor("10.0.0.1")).toBe("10.0.0.1 is in a private range (10.0.0.0/8)");
    expect(reasonFor("169.254.169.254")).toContain("link-local");
    expect(reasonFor("127.0.0.1")).toContain("loopback");
    expect(reasonFor("fd00::1")).toContain("unique-local");
  });

  const public_: string[] = [
    "1.1.1.1",
    "8.8.8.8",
    "9.255.255.255",
    "11.0.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "126.255.255.255",
    "128.0.0.0",
    "169.253.255.255",
    "169.255.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "192.167.255.255",
    "192.169.0.0",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "2001:4860:4860::8888",
    "64:ff9b::8.8.8.8",
    "::ffff:8.8.8.8",
  ];
  it.each(public_)("allows the public address %s", (address) => {
    expect(checkAddress(address, noGrant, plain)).toEqual({ allowed: true });
  });

  it("covers every built-in range with at least one refused example above", () => {
    const named = new Set(denied.map(([, cidr]) => cidr));
    for (const range of DEFAULT_DENY_RANGES) expect(named).toContain(range.text);
  });
});

describe("IPv6 forms that carry an IPv4 address", () => {
  const mapped: [string, string][] = [
    ["::ffff:10.0.0.1", "10.0.0.0/8"],
    ["::ffff:a00:1", "10.0.0.0/8"],
    ["0:0:0:0:0:ffff:0a00:0001", "10.0.0.0/8"],
    ["::FFFF:127.0.0.1", "127.0.0.0/8"],
    ["::ffff:7f00:1", "127.0.0.0/8"],
    ["::ffff:169.254.169.254", "169.254.0.0/16"],
    ["::ffff:a9fe:a9fe", "169.254.0.0/16"],
    ["::ffff:192.168.0.1", "192.168.0.0/16"],
    ["::ffff:172.16.0.1", "172.16.0.0/12"],
    ["::ffff:100.64.0.1", "100.64.0.0/10"],
    ["::ffff:0.0.0.0", "0.0.0.0/8"],
    ["::ffff:255.255.255.255", "255.255.255.255/32"],
  ];
  it.each(mapped)("refuses the IPv4-mapped %s as its IPv4 address (%s)", (address, cidr) => {
    const reason = reasonFor(address);
    expect(reason).toContain(`(${cidr})`);
    expect(reason).toContain("IPv4-mapped");
  });

  it.each([
    ["64:ff9b::10.0.0.1", "10.0.0.0/8"],
    ["64:ff9b::a9fe:a9fe", "169.254.0.0/16"],
    ["64:ff9b::127.0.0.1", "127.0.0.0/8"],
  ])("refuses NAT64 %s by the IPv4 address it carries (%s)", (address, cidr) => {
    expect(reasonFor(address)).toContain(`(${cidr})`);
    expect(reasonFor(address)).toContain("NAT64");
  });

  it("a grant of the IPv4 range covers its mapped and NAT64 forms", () => {
    const grant = { allowCidrs: ["10.1.0.0/16"], allowHosts: [] };
    expect(reasonFor("::ffff:10.1.2.3", grant)).toBeUndefined();
    expect(reasonFor("64:ff9b::10.1.2.3", grant)).toBeUndefined();
    expect(reasonFor("::ffff:10.2.0.1", grant)).toContain("10.0.0.0/8");
  });
});

describe("the grant's allowCidrs", () => {
  it("opens an address inside a default-deny range, and only what it names", () => {
    const grant = { allowCidrs: ["10.1.0.0/16", "fd00:1::/32"], allowHosts: [] };
    expect(reasonFor("10.1.255.255", grant)).toBeUndefined();
    expect(reasonFor("10.2.0.1", grant)).toContain("10.0.0.0/8");
    expect(reasonFor("fd00:1::5", grant)).toBeUndefined();
    expect(reasonFor("fd00:2::5", grant)).toContain("fc00::/7");
  });

  it("opens loopback when it names it (what the proxy's tests rely on)", () => {
    const grant = { allowCidrs: ["127.0.0.1/32"], allowHosts: [] };
    expect(reasonFor("127.0.0.1", grant)).toBeUndefined();
    expect(reasonFor("127.0.0.2", grant)).toContain("loopback");
    expect(reasonFor("::1", grant)).toContain("loopback");
  });

  it("an IPv6 range never opens IPv4 addresses (Node's BlockList would match across families)", () => {
    const grant = { allowCidrs: ["::/0"], allowHosts: [] };
    expect(reasonFor("10.0.0.1", grant)).toContain("private");
    expect(reasonFor("::ffff:10.0.0.1", grant)).toContain("private");
    expect(reasonFor("fd00::1", grant)).toBeUndefined();
  });

  it("cannot open the deployment's denyCidrs", () => {
    const settings = { denyCidrs: ["10.96.0.0/12", "fd10::/16"] };
    const grant = { allowCidrs: ["10.0.0.0/8", "fd00::/8"], allowHosts: [] };
    expect(reasonFor("10.96.0.10", grant, settings)).toBe(
      "10.96.0.10 is in a range this deployment denies (10.96.0.0/12)",
    );
    expect(reasonFor("::ffff:10.96.0.10", grant, settings)).toContain("10.96.0.0/12");
    expect(reasonFor("fd10::1", grant, settings)).toContain("fd10::/16");
    expect(reasonFor("10.1.0.1", grant, settings)).toBeUndefined();
  });

  it("denyCidrs refuse public addresses too", () => {
    expect(reasonFor("203.0.114.1", noGrant, { denyCidrs: ["203.0.114.0/24"] })).toContain("denies");
  });
});

describe("the gateway host's own addresses", () => {
  const settings = { denyCidrs: [], hostAddresses: ["198.20.5.5", "2a01:4f8::5", "fe80::5%eth0"] };
  it("are refused though public", () => {
    expect(reasonFor("198.20.5.5", noGrant, settings)).toBe("198.20.5.5 is an address of the gateway's host");
    expect(reasonFor("::ffff:198.20.5.5", noGrant, settings)).toContain("gateway's host");
    expect(reasonFor("2a01:4f8:0::5", noGrant, settings)).toContain("gateway's host");
    expect(reasonFor("198.20.5.6", noGrant, settings)).toBeUndefined();
  });
  it("are open to a grant that names them", () => {
    expect(
      reasonFor("198.20.5.5", { allowCidrs: ["198.20.5.5/32"], allowHosts: [] }, settings),
    ).toBeUndefined();
  });
});

describe("every resolved address must pass", () => {
  const request = { host: "rebind.example", port: 443 };
  it("one private address among public ones refuses the whole name", () => {
    const decision = decideEgress({ ...request, addresses: ["8.8.8.8", "10.0.0.1"] }, noGrant, plain);
    expect(decision).toEqual({ allowed: false, reason: "10.0.0.1 is in a private range (10.0.0.0/8)" });
  });
  it("no address at all is a refusal", () => {
    expect(decideEgress({ ...request, addresses: [] }, noGrant, plain).allowed).toBe(false);
  });
  it("something that is not an address is a refusal", () => {
    expect(decideEgress({ ...request, addresses: ["localhost"] }, noGrant, plain).allowed).toBe(false);
  });
  it("all public: allowed", () => {
    expect(decideEgress({ ...request, addresses: ["8.8.8.8", "2001:4860::1"] }, noGrant, plain)).toEqual({
      allowed: true,
    });
  });
});

describe("host names and ports", () => {
  const grant = { allowCidrs: [], allowHosts: ["pypi.org", "*.pythonhosted.org"] };
  const allowed = (host: string, port = 443, settings = plain) =>
    checkDestination({ host, port }, grant, settings).allowed;

  it("an empty allowHosts allows any name", () => {
    expect(checkDestination({ host: "anything.example", port: 443 }, noGrant, plain).allowed).toBe(true);
  });
  it("exact names match exactly, case and a trailing dot aside", () => {
    expect(allowed("pypi.org")).toBe(true);
    expect(allowed("PyPI.org.")).toBe(true);
    expect(allowed("www.pypi.org")).toBe(false);
    expect(allowed("pypi.org.evil.example")).toBe(false);
    expect(allowed("evilpypi.org")).toBe(false);
  });
  it("*.suffix matches names strictly below it", () => {
    expect(allowed("files.pythonhosted.org")).toBe(true);
    expect(allowed("a.b.pythonhosted.org")).toBe(true);
    expect(allowed("pythonhosted.org")).toBe(false);
    expect(allowed("evilpythonhosted.org")).toBe(false);
    expect(allowed("pythonhosted.org.evil.example")).toBe(false);
  });
  it("an IP literal never matches a host list", () => {
    const decision = checkDestination({ host: "151.101.0.223", port: 443 }, grant, plain);
    expect(decision.allowed).toBe(false);
    expect(checkDestination({ host: "2a04:4e42::223", port: 443 }, grant, plain).allowed).toBe(false);
  });
  it("names the refused host", () => {
    expect(checkDestination({ host: "Evil.example", port: 443 }, grant, plain)).toEqual({
      allowed: false,
      reason: "host 'evil.example' is not in this workspace's allowed hosts",
    });
  });
  it("allowPorts, when non-empty, is the only ports allowed", () => {
    expect(allowed("pypi.org", 22, { denyCidrs: [], allowPorts: [] })).toBe(true);
    const settings = { denyCidrs: [], allowPorts: [80, 443] };
    expect(allowed("pypi.org", 443, settings)).toBe(true);
    expect(allowed("pypi.org", 22, settings)).toBe(false);
    expect(checkDestination({ host: "pypi.org", port: 22 }, grant, settings)).toEqual({
      allowed: false,
      reason: "port 22 is not allowed (allowed: 80, 443)",
    });
  });
  it("refuses ports out of range", () => {
    expect(allowed("pypi.org", 0)).toBe(false);
    expect(allowed("pypi.org", 65_536)).toBe(false);
    expect(allowed("pypi.org", 1.5)).toBe(false);
  });
  it("a name that passes is still refused by its addresses", () => {
    const decision = decideEgress({ host: "pypi.org", port: 443, addresses: ["127.0.0.1"] }, grant, plain);
    expect(decision.allowed).toBe(false);
  });
});
