/**
 * Whether a sandbox may open a connection to a destination: pure data in, a decision out.
 * The egress proxy asks twice: once with the requested host and port (before resolving, so
 * a refused name is never even looked up), then with every address the name resolved to.
 * EVERY address must pass, and the proxy connects to a checked address itself, never
 * resolving again: a name that answers a public address to the check and a private one to
 * the connection (DNS rebinding) gets nothing.
 *
 * Order of the address check, first match wins:
 *   1. the deployment's own deny ranges (`egress.denyCidrs`, e.g. the cluster's): always refused;
 *   2. the workspace grant's `allowCidrs`: allowed, even inside a default-deny range;
 *   3. the default deny ranges below (loopback, private, link-local, ...): refused;
 *   4. the gateway host's own addresses (its public ones, too): refused;
 *   5. NAT64 (64:ff9b::/96): decided by the IPv4 address it carries;
 *   6. anything else: allowed.
 * IPv4-mapped IPv6 addresses (::ffff:10.0.0.1) are checked as the IPv4 address they are.
 */
import type { BlockList } from "node:net";
import {
  blockListOf,
  type Cidr,
  embeddedIpv4,
  hostMatchesPattern,
  type IpFamily,
  ipFamily,
  normalizeHost,
  parseCidr,
} from "../policy-schema/egress-patterns.js";

/** What a workspace may reach beyond the defaults (from its effective policy). */
export interface EgressGrant {
  /** Ranges allowed even where the defaults deny (never beyond the deployment's denyCidrs). */
  allowCidrs: readonly string[];
  /** When non-empty, the requested host name must match one entry (exact or `*.suffix`). */
  allowHosts: readonly string[];
  /**
   * Credentials the proxy adds on the way out (TLS terminated for their hosts only, with
   * the deployment's CA): the session's secrets, their values rendered. Absent: none.
   */
  credentials?: readonly EgressCredential[];
}

/** One secret, ready to present: what the proxy needs to add it to a request. */
export interface EgressCredential {
  /** The secret's name (metrics, audit; never its value). */
  secret: string;
  /** Host patterns it is sent to (exact or `*.suffix`). */
  hosts: readonly string[];
  ports?: readonly number[];
  /** Path prefixes; absent: every path. */
  paths?: readonly string[];
  /** Upper-case methods; absent: every method. */
  methods?: readonly string[];
  /** The header set (replacing any the sandbox sent) and its full value. */
  header: string;
  value: string;
}

/** The deployment's side: what no grant can open. */
export interface EgressDenySettings {
  /** Extra ranges refused whatever a grant says (cluster pod and service ranges, ...). */
  denyCidrs: readonly string[];
  /** When non-empty, the only destination ports allowed. */
  allowPorts?: readonly number[];
  /** The gateway host's own addresses (refused unless a grant allows them). */
  hostAddresses?: readonly string[];
}

export interface EgressDestination {
  /** The host name or IP literal the sandbox asked for (no brackets). */
  host: string;
  port: number;
}

export type EgressDecision = { allowed: true } | { allowed: false; reason: string };

const ALLOWED: EgressDecision = { allowed: true };
const refuse = (reason: string): EgressDecision => ({ allowed: false, reason });

interface NamedRange extends Cidr {
  /** Reads after "is in": "a private range". */
  label: string;
  list: BlockList;
}

function range(text: string, label: string): NamedRange {
  const cidr = parseCidr(text);
  if (cidr === undefined) throw new Error(`bad built-in range ${text}`);
  return { ...cidr, label, list: blockListOf([cidr], cidr.family) };
}

/** Refused by default. More specific ranges come first so the reason names them. */
export const DEFAULT_DENY_RANGES: readonly NamedRange[] = [
  range("0.0.0.0/8", "the unspecified range"),
  range("127.0.0.0/8", "the loopback range"),
  range("10.0.0.0/8", "a private range"),
  range("172.16.0.0/12", "a private range"),
  range("192.168.0.0/16", "a private range"),
  range("100.64.0.0/10", "the shared (CGNAT) range"),
  range("169.254.0.0/16", "the link-local range (cloud metadata lives there)"),
  range("192.0.0.0/24", "the IETF protocol range"),
  range("192.0.2.0/24", "a documentation range"),
  range("198.51.100.0/24", "a documentation range"),
  range("203.0.113.0/24", "a documentation range"),
  range("198.18.0.0/15", "the benchmarking range"),
  range("192.88.99.0/24", "the 6to4 relay range"),
  range("224.0.0.0/4", "the multicast range"),
  range("255.255.255.255/32", "the broadcast address"),
  range("240.0.0.0/4", "a reserved range"),
  range("::/128", "the unspecified address"),
  range("::1/128", "the loopback address"),
  range("::/96", "the IPv4-compatible range"),
  range("::ffff:0:0:0/96", "the IPv4-translated range"),
  range("64:ff9b:1::/48", "the local-use NAT64 range"),
  range("100::/64", "the discard range"),
  range("2001::/32", "the Teredo range"),
  range("2001:db8::/32", "a documentation range"),
  range("3fff::/20", "a documentation range"),
  range("2002::/16", "the 6to4 range"),
  range("fc00::/7", "a unique-local range (ULA)"),
  range("fe80::/10", "the link-local range"),
  range("fec0::/10", "the site-local range"),
  range("ff00::/8", "the multicast range"),
];

function firstRangeHolding(address: string, family: IpFamily, cidrs: readonly string[]): string | undefined {
  for (const text of cidrs) {
    const cidr = parseCidr(text);
    if (cidr && cidr.family === family && blockListOf([cidr], family).check(address, family)) return text;
  }
  return undefined;
}

/** The host and port, before anything is resolved. */
export function checkDestination(
  destination: EgressDestination,
  grant: EgressGrant,
  settings: EgressDenySettings,
): EgressDecision {
  const { host, port } = destination;
  if (!Number.isInteger(port) || port < 1 || port > 65_535) return refuse(`port ${port} is not a valid port`);
  if (settings.allowPorts?.length && !settings.allowPorts.includes(port))
    return refuse(`port ${port} is not allowed (allowed: ${settings.allowPorts.join(", ")})`);
  if (grant.allowHosts.length === 0) return ALLOWED;
  if (ipFamily(host) !== undefined)
    return refuse(`${host} is an address; this workspace may only reach the hosts it allows`);
  if (!grant.allowHosts.some((pattern) => hostMatchesPattern(host, pattern)))
    return refuse(`host '${normalizeHost(host)}' is not in this workspace's allowed hosts`);
  return ALLOWED;
}

/** One resolved address. */
export function checkAddress(
  address: string,
  grant: EgressGrant,
  settings: EgressDenySettings,
): EgressDecision {
  const family = ipFamily(address.split("%")[0]!);
  if (family === undefined) return refuse(`'${address}' is not an IP address`);
  const embedded = family === "ipv6" ? embeddedIpv4(address) : undefined;
  if (embedded?.kind === "mapped") {
    const decision = checkAddress(embedded.ipv4, grant, settings);
    return decision.allowed
      ? decision
      : refuse(`${address} (IPv4-mapped ${embedded.ipv4}): ${stripSubject(decision.reason, embedded.ipv4)}`);
  }
  const bare = address.split("%")[0]!;

  const denied = firstRangeHolding(bare, family, settings.denyCidrs);
  if (denied) return refuse(`${address} is in a range this deployment denies (${denied})`);
  if (firstRangeHolding(bare, family, grant.allowCidrs)) return ALLOWED;
  for (const named of DEFAULT_DENY_RANGES) {
    if (named.family === family && named.list.check(bare, family))
      return refuse(`${address} is in ${named.label} (${named.text})`);
  }
  if (isHostAddress(bare, family, settings.hostAddresses ?? []))
    return refuse(`${address} is an address of the gateway's host`);
  if (embedded?.kind === "nat64") {
    const decision = checkAddress(embedded.ipv4, grant, settings);
    return decision.allowed
      ? decision
      : refuse(`${address} (NAT64 of ${embedded.ipv4}): ${stripSubject(decision.reason, embedded.ipv4)}`);
  }
  return ALLOWED;
}

/** Every address must pass; none at all is a refusal too. */
export function checkAddresses(
  addresses: readonly string[],
  grant: EgressGrant,
  settings: EgressDenySettings,
): EgressDecision {
  if (addresses.length === 0) return refuse("the host resolved to no address");
  for (const address of addresses) {
    const decision = checkAddress(address, grant, settings);
    if (!decision.allowed) return decision;
  }
  return ALLOWED;
}

/** Both steps at once: the destination, then every resolved address. */
export function decideEgress(
  request: EgressDestination & { addresses: readonly string[] },
  grant: EgressGrant,
  settings: EgressDenySettings,
): EgressDecision {
  const destination = checkDestination(request, grant, settings);
  return destination.allowed ? checkAddresses(request.addresses, grant, settings) : destination;
}

function isHostAddress(address: string, family: IpFamily, hostAddresses: readonly string[]): boolean {
  const own = hostAddresses
    .map((text) => text.split("%")[0]!)
    .filter((text) => ipFamily(text) === family)
    .map((text) => `${text}/${family === "ipv4" ? 32 : 128}`);
  return firstRangeHolding(address, family, own) !== undefined;
}

/** "10.0.0.1 is in a private range" -> "is in a private range" (the caller names the subject). */
function stripSubject(reason: string, subject: string): string {
  return reason.startsWith(`${subject} `) ? reason.slice(subject.length + 1) : reason;
}
