/**
 * Which of a grant's credentials apply: first to a CONNECT (its host and port decide whether
 * the proxy terminates TLS at all), then to each request inside it (its method and path
 * decide whether the header is added). Pure data in, a decision out.
 */
import { validateHeaderName, validateHeaderValue } from "node:http";
import { hostMatchesPattern, normalizeHost } from "../policy-schema/egress-patterns.js";
import { CREDENTIAL_FREE_METHODS } from "../secrets/workspace-secrets.js";
import type { EgressCredential, EgressGrant } from "./egress-rules.js";

/** The grant's credentials bound to this host and port; empty: a plain tunnel. */
export function credentialsForDestination(
  grant: EgressGrant,
  host: string,
  port: number,
): EgressCredential[] {
  const name = normalizeHost(host);
  return (grant.credentials ?? []).filter(
    (credential) =>
      credential.hosts.some((pattern) => hostMatchesPattern(name, pattern)) &&
      (credential.ports === undefined || credential.ports.length === 0 || credential.ports.includes(port)),
  );
}

/**
 * A path whose meaning an upstream may read differently from its text: dot segments (plain or
 * percent-encoded), encoded slashes or backslashes, backslashes, empty segments, and matrix
 * parameters (`;`: Tomcat, Jetty and Spring read `/v1/..;/admin` as `/admin`). A credential
 * bound to `/v1/` must not ride `/v1/../admin`: such a path gets no credential.
 */
const AMBIGUOUS_PATH = /(^|\/)(\.|%2e){1,2}(\/|$)|%2f|%5c|\\|\/\/|%00|;|%3b/i;

/** Whether `path` is under `prefix`: the same, or below it at a segment boundary (`/repos/acme` is not `/repos/acme-other`). */
function underPrefix(path: string, prefix: string): boolean {
  if (!path.startsWith(prefix)) return false;
  return path.length === prefix.length || prefix.endsWith("/") || path[prefix.length] === "/";
}

function pathOf(target: string): string {
  const query = target.search(/[?#]/);
  return query === -1 ? target : target.slice(0, query);
}

/** The first credential whose method and path constraints the request meets. */
export function credentialForRequest(
  credentials: readonly EgressCredential[],
  method: string,
  target: string,
): EgressCredential | undefined {
  const path = pathOf(target);
  const upperMethod = method.toUpperCase();
  if (CREDENTIAL_FREE_METHODS.has(upperMethod)) return undefined;
  return credentials.find((credential) => {
    if (credential.methods?.length && !credential.methods.map((m) => m.toUpperCase()).includes(upperMethod))
      return false;
    if (!credential.paths?.length) return true;
    if (AMBIGUOUS_PATH.test(path)) return false;
    return credential.paths.some((prefix) => underPrefix(path, prefix));
  });
}

/**
 * Whether a request's Host header names the CONNECT's host (with its port, or none): inside a
 * tunnel opened for one host, a request for another must not carry that host's credential.
 */
export function hostHeaderMatches(hostHeader: string | undefined, host: string, port: number): boolean {
  if (hostHeader === undefined) return false;
  const value = hostHeader.trim().toLowerCase();
  const name = host.includes(":") ? `[${host}]` : host;
  return (
    value === name || value === `${name}:${port}` || value === `${name}.` || value === `${name}.:${port}`
  );
}

/** Names a credential may never set: they frame the request or address another hop. */
const FRAMING_HEADERS = new Set([
  "host",
  "connection",
  "content-length",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "keep-alive",
  "expect",
]);

/**
 * Why a credential cannot be sent as it is (undefined: it can). Part of the store's checks
 * too, but the proxy never trusts that: a value with CR or LF would split the request.
 * The answer names the secret, never its value.
 */
export function credentialHeaderProblem(credential: EgressCredential): string | undefined {
  const name = credential.header.toLowerCase();
  if (FRAMING_HEADERS.has(name) || name.startsWith("proxy-"))
    return `secret '${credential.secret}' is bound to header '${credential.header}', which a credential may not set`;
  try {
    validateHeaderName(credential.header);
    validateHeaderValue(credential.header, credential.value);
  } catch {
    return `secret '${credential.secret}' cannot be sent as a header: its name or value holds characters HTTP forbids`;
  }
  return undefined;
}

/**
 * The binding pattern of `secret` that `host` matched: what a use is reported by (metric
 * labels stay bounded by the operator's patterns, not the names code asks for).
 */
export function boundPattern(credentials: readonly EgressCredential[], secret: string, host: string): string {
  const credential = credentials.find((candidate) => candidate.secret === secret);
  return credential?.hosts.find((pattern) => hostMatchesPattern(host, pattern)) ?? host;
}
