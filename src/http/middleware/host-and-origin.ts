/**
 * Pipeline step 0, after the target guard: which Host and Origin headers the gateway answers.
 *
 * Host (403 `request.host_denied`) defends against DNS rebinding: a web page whose name an
 * attacker re-points at 127.0.0.1 reaches a gateway on loopback as same-origin, but its
 * requests still carry the attacker's name as Host. So a name is answered only when it is a
 * loopback name (`localhost`, `*.localhost`) or configured (`http.allowedHosts`: exact names,
 * `.domain` for a domain and its subdomains, `*` for any). An IP address is always answered:
 * a rebinding page has a name, never an address, and probes and scrapers (kubelet,
 * Prometheus) address a pod by its IP. A request without Host (HTTP/1.0) is no browser's.
 *
 * Origin (403 `request.origin_denied`) is checked only when present: browsers send it,
 * non-browser clients (Otari) do not. Loopback origins and configured ones
 * (`http.allowedOrigins`, exact `scheme://host[:port]`, or `*`) pass; `null` never does.
 */
import { isIP } from "node:net";
import type { Context } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import { requestHeader } from "../common/request-header.js";

export interface HostTrust {
  allowedHosts: readonly string[];
  allowedOrigins: readonly string[];
}

/** Characters a Host header may hold: a name or address and a port, nothing a URL would reinterpret. */
const AUTHORITY = /^[A-Za-z0-9_.\-[\]:]+$/;

/** The host name of a `host[:port]` authority, lower-case, without a trailing dot; undefined if malformed. */
export function hostnameOf(authority: string): string | undefined {
  if (!AUTHORITY.test(authority)) return undefined;
  try {
    // The URL parser normalizes as a browser would (case, IPv4 spellings like 0x7f.1).
    const hostname = new URL(`http://${authority}`).hostname;
    return hostname.endsWith(".") ? hostname.slice(0, -1) : hostname;
  } catch {
    return undefined;
  }
}

function isIpAddress(hostname: string): boolean {
  const bare = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
  return isIP(bare) !== 0;
}

/** `localhost`, `*.localhost` (RFC 6761), 127.0.0.0/8 and [::1]. */
export function isLoopbackName(hostname: string): boolean {
  if (hostname === "localhost" || hostname.endsWith(".localhost")) return true;
  if (hostname === "[::1]") return true;
  return isIP(hostname) === 4 && hostname.startsWith("127.");
}

function matchesHostEntry(hostname: string, entry: string): boolean {
  const wanted = entry.toLowerCase();
  if (wanted === "*") return true;
  if (wanted.startsWith(".")) return hostname === wanted.slice(1) || hostname.endsWith(wanted);
  return hostname === (hostnameOf(wanted) ?? wanted);
}

export function isAllowedHost(hostHeader: string, allowedHosts: readonly string[]): boolean {
  const hostname = hostnameOf(hostHeader);
  if (hostname === undefined) return false;
  if (isLoopbackName(hostname) || isIpAddress(hostname)) return true;
  return allowedHosts.some((entry) => matchesHostEntry(hostname, entry));
}

/** `scheme://host[:port]` as the URL parser normalizes it, or undefined for anything else. */
function normalizedOrigin(origin: string): { origin: string; hostname: string } | undefined {
  if (!/^https?:\/\/[A-Za-z0-9_.\-[\]:]+$/i.test(origin)) return undefined;
  try {
    const url = new URL(origin);
    const hostname = url.hostname.endsWith(".") ? url.hostname.slice(0, -1) : url.hostname;
    return { origin: url.origin, hostname };
  } catch {
    return undefined;
  }
}

export function isAllowedOrigin(originHeader: string, allowedOrigins: readonly string[]): boolean {
  if (allowedOrigins.includes("*")) return true;
  const parsed = normalizedOrigin(originHeader);
  if (parsed === undefined) return false; // `null`, opaque and malformed origins
  if (isLoopbackName(parsed.hostname)) return true;
  return allowedOrigins.some((entry) => normalizedOrigin(entry)?.origin === parsed.origin);
}

/** Host headers whose verdict is remembered, at most: a client chooses them, so the memory is bounded. */
const REMEMBERED_HOSTS = 256;

/** A check that refuses a request whose Host or Origin is not trusted (403). */
export function hostAndOriginCheck(trust: HostTrust): (c: Context) => void {
  // A client sends the same Host on every request: its verdict (a URL parse) is kept.
  const verdicts = new Map<string, boolean>();
  const hostAllowed = (host: string): boolean => {
    let allowed = verdicts.get(host);
    if (allowed === undefined) {
      allowed = isAllowedHost(host, trust.allowedHosts);
      if (verdicts.size >= REMEMBERED_HOSTS) verdicts.clear();
      verdicts.set(host, allowed);
    }
    return allowed;
  };
  return (c) => {
    const host = requestHeader(c, "host");
    if (typeof host === "string" && !hostAllowed(host)) {
      throw new SandpoolError("request.host_denied", "this gateway does not answer for that host");
    }
    const origin = requestHeader(c, "origin");
    if (origin !== undefined && !isAllowedOrigin(origin, trust.allowedOrigins)) {
      throw new SandpoolError("request.origin_denied", "requests from that origin are not allowed");
    }
  };
}
