/**
 * Whether a URL's host is this machine's loopback (127.0.0.0/8, ::1, localhost): the only
 * place a plain-http endpoint is acceptable, since nothing on the network can read or
 * rewrite what it answers. The WHATWG URL parser has already canonicalised IPv4 spellings
 * (`127.1`, `0x7f.0.0.1`) to dotted quads and bracketed IPv6 literals.
 */
import { isIPv4 } from "node:net";

export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (host === "localhost" || host === "::1") return true;
  return isIPv4(host) && host.startsWith("127.");
}

/** True for an https URL, or an http one to a loopback host; false for anything else. */
export function isSecureOrLoopbackUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.protocol === "https:") return true;
  return url.protocol === "http:" && isLoopbackHost(url.hostname);
}
