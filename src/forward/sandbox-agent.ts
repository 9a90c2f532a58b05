/**
 * One undici Agent for every sandbox the gateway talks to, whether it listens on TCP
 * (`http://host:port`: the process runtime, a bare sandbox server) or on a Unix socket
 * (`unix:/path`: pooled containers, which have no network at all).
 *
 * A Unix endpoint becomes an origin whose host name spells the socket path in hex. The
 * Agent then keeps one connection pool per socket and drops it once its connections
 * close, as it does for TCP origins, so there is no map of sockets to clean up here.
 */
import { Agent, Pool } from "undici";

const UNIX_SCHEME = "unix:";
/** Never resolved: `.invalid` is reserved (RFC 2606), and the pool connects to the socket. */
const SOCKET_HOST_SUFFIX = ".sock.invalid";
const DNS_LABEL = /.{1,63}/g;

/** True for `unix:/path` endpoints. */
export function isUnixEndpoint(endpoint: string): boolean {
  return endpoint.startsWith(UNIX_SCHEME);
}

export function unixEndpoint(socketPath: string): string {
  return `${UNIX_SCHEME}${socketPath}`;
}

/** Unix endpoints' origins, made once each: every call to a sandbox asks for one. */
const unixOrigins = new Map<string, string>();
const MAX_REMEMBERED_ORIGINS = 4096;

/** The origin to request for an endpoint: TCP endpoints as they are, Unix ones encoded. */
export function sandboxOrigin(endpoint: string): string {
  if (!isUnixEndpoint(endpoint)) return endpoint;
  let origin = unixOrigins.get(endpoint);
  if (origin === undefined) {
    const hex = Buffer.from(endpoint.slice(UNIX_SCHEME.length)).toString("hex");
    origin = `http://${hex.match(DNS_LABEL)!.join(".")}${SOCKET_HOST_SUFFIX}`;
    // Sandboxes come and go: a full map starts over rather than growing without end.
    if (unixOrigins.size >= MAX_REMEMBERED_ORIGINS) unixOrigins.clear();
    unixOrigins.set(endpoint, origin);
  }
  return origin;
}

function socketPathOf(origin: string | URL): string | undefined {
  const { hostname } = typeof origin === "string" ? new URL(origin) : origin;
  if (!hostname.endsWith(SOCKET_HOST_SUFFIX)) return undefined;
  const hex = hostname.slice(0, -SOCKET_HOST_SUFFIX.length).replaceAll(".", "");
  return Buffer.from(hex, "hex").toString();
}

export function createSandboxAgent(options: Agent.Options = {}): Agent {
  return new Agent({
    ...options,
    factory: (origin, poolOptions) => {
      const socketPath = socketPathOf(origin);
      return new Pool(origin, socketPath ? { ...poolOptions, socketPath } : poolOptions);
    },
  });
}
