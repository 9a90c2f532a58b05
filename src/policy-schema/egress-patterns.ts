/**
 * The two kinds of entry an egress allow-list holds, and what operators may write: CIDR
 * ranges (`10.1.0.0/16`, `2001:db8::/32`) and host-name patterns (`pypi.org`, or
 * `*.pythonhosted.org` for every name below it). Pure functions, shared by the policy
 * (validation, the deployment ceiling) and the egress rules (matching).
 */
import { BlockList, isIPv4, isIPv6 } from "node:net";

export type IpFamily = "ipv4" | "ipv6";

export interface Cidr {
  /** The range as written. */
  text: string;
  network: string;
  prefix: number;
  family: IpFamily;
}

/** The address family of an IP literal, or undefined when it is not one. */
export function ipFamily(address: string): IpFamily | undefined {
  if (isIPv4(address)) return "ipv4";
  if (isIPv6(address)) return "ipv6";
  return undefined;
}

/** Parses `a.b.c.d/n` or `x:y::/n`; undefined when it is not a CIDR range. */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const network = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  const family = ipFamily(network);
  if (family === undefined || network.includes("%") || !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  if (prefix > (family === "ipv4" ? 32 : 128)) return undefined;
  return { text, network, prefix, family };
}

/** Why a CIDR range cannot be used, or undefined when it can. */
export function cidrProblem(text: string): string | undefined {
  const cidr = parseCidr(text);
  if (cidr === undefined) return `'${text}' is not a CIDR range (for example 10.1.0.0/16 or 2001:db8::/32)`;
  // Mapped addresses are checked in their IPv4 form, so a range written in the mapped form
  // would silently match nothing.
  if (cidr.family === "ipv6" && embeddedIpv4(cidr.network)?.kind === "mapped")
    return `'${text}' is an IPv4-mapped range: write it in IPv4 form`;
  return undefined;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Why a host-name pattern cannot be used, or undefined when it can. */
export function hostPatternProblem(pattern: string): string | undefined {
  const name = pattern.startsWith("*.") ? pattern.slice(2) : pattern;
  const labels = name.toLowerCase().split(".");
  const bad =
    name.length === 0 ||
    name.length > 253 ||
    !labels.every((label) => LABEL.test(label)) ||
    /^\d+$/.test(labels[labels.length - 1]!);
  if (ipFamily(pattern) !== undefined || ipFamily(name) !== undefined)
    return `'${pattern}' is an address, not a host name (allow addresses with a CIDR range)`;
  if (bad)
    return `'${pattern}' is not a host name or a '*.' pattern (for example pypi.org or *.pythonhosted.org)`;
  return undefined;
}

/** A requested host in the form patterns are compared with: lower case, no trailing dot. */
export function normalizeHost(host: string): string {
  return host.toLowerCase().replace(/\.$/, "");
}

/** `pattern` is a host name (exact) or `*.suffix` (any name strictly below suffix). */
export function hostMatchesPattern(host: string, pattern: string): boolean {
  const name = normalizeHost(host);
  const wanted = pattern.toLowerCase();
  if (wanted.startsWith("*.")) return name.endsWith(wanted.slice(1)) && name.length > wanted.length - 1;
  return name === wanted;
}

/** Whether everything `pattern` matches is matched by one of `ceiling` too. */
export function hostPatternWithin(pattern: string, ceiling: readonly string[]): boolean {
  const wanted = pattern.toLowerCase();
  return ceiling.some((outer) => {
    const bound = outer.toLowerCase();
    if (bound === wanted) return true;
    if (!bound.startsWith("*.")) return false;
    // `*.example.com` covers `a.example.com`, `*.example.com` and `*.a.example.com`.
    const suffix = bound.slice(1);
    const below = wanted.startsWith("*.") ? wanted.slice(1) : wanted;
    return below === suffix || (below.endsWith(suffix) && below.length > suffix.length);
  });
}

/** A BlockList of one family's ranges (Node's BlockList matches across families otherwise). */
export function blockListOf(cidrs: readonly Cidr[], family: IpFamily): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) if (cidr.family === family) list.addSubnet(cidr.network, cidr.prefix, family);
  return list;
}

/** Whether every address of `inner` lies in one of `ceiling`'s ranges. */
export function cidrWithin(inner: string, ceiling: readonly string[]): boolean {
  const range = parseCidr(inner);
  if (range === undefined) return false;
  return ceiling.some((text) => {
    const outer = parseCidr(text);
    if (outer === undefined || outer.family !== range.family || outer.prefix > range.prefix) return false;
    // With a prefix at least as long, all of inner shares its first outer.prefix bits with
    // its network address: that address being inside outer is enough.
    return blockListOf([outer], outer.family).check(range.network, range.family);
  });
}

export type EmbeddedKind = "mapped" | "translated" | "nat64" | "compatible";

/**
 * The IPv4 address an IPv6 address carries in its last 32 bits, for the forms that carry
 * one: IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), NAT64's well-known
 * prefix (64:ff9b::a.b.c.d) and the deprecated IPv4-compatible form (::a.b.c.d).
 */
export function embeddedIpv4(address: string): { kind: EmbeddedKind; ipv4: string } | undefined {
  const hextets = ipv6Hextets(address);
  if (hextets === undefined) return undefined;
  const ipv4 = [hextets[6]! >> 8, hextets[6]! & 0xff, hextets[7]! >> 8, hextets[7]! & 0xff].join(".");
  const zeros = (from: number, to: number) => hextets.slice(from, to).every((h) => h === 0);
  if (zeros(0, 5) && hextets[5] === 0xffff) return { kind: "mapped", ipv4 };
  if (zeros(0, 4) && hextets[4] === 0xffff && hextets[5] === 0) return { kind: "translated", ipv4 };
  if (hextets[0] === 0x64 && hextets[1] === 0xff9b && zeros(2, 6)) return { kind: "nat64", ipv4 };
  if (zeros(0, 6) && (hextets[6] !== 0 || hextets[7]! > 1)) return { kind: "compatible", ipv4 };
  return undefined;
}

/** The eight 16-bit groups of an IPv6 literal (a zone suffix ignored), or undefined. */
export function ipv6Hextets(address: string): number[] | undefined {
  const text = address.split("%")[0]!;
  if (!isIPv6(text)) return undefined;
  let body = text;
  const tail: number[] = [];
  const lastColon = body.lastIndexOf(":");
  if (body.slice(lastColon + 1).includes(".")) {
    const [a, b, c, d] = body
      .slice(lastColon + 1)
      .split(".")
      .map(Number) as [number, number, number, number];
    tail.push((a << 8) | b, (c << 8) | d);
    body = body.slice(0, lastColon + 1);
    // "::ffff:" loses its trailing colon; a bare "::" (as in "::1.2.3.4") stays the gap.
    if (!body.endsWith("::")) body = body.slice(0, -1);
  }
  const groups = (part: string) => (part === "" ? [] : part.split(":").map((h) => Number.parseInt(h, 16)));
  const gap = body.indexOf("::");
  let hextets: number[];
  if (gap >= 0) {
    const head = groups(body.slice(0, gap));
    const rest = groups(body.slice(gap + 2));
    const missing = 8 - head.length - rest.length - tail.length;
    hextets = [...head, ...new Array<number>(missing).fill(0), ...rest, ...tail];
  } else {
    hextets = [...groups(body), ...tail];
  }
  return hextets.length === 8 ? hextets : undefined;
}
