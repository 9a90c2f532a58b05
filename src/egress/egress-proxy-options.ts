/** What the egress proxy is built with (egress-proxy.ts): its bounds, its hooks, its injection. */
import type { Logger } from "pino";
import type { EgressResolver } from "./egress-resolve.js";
import type { EgressGrant } from "./egress-rules.js";
import type { LeafSource } from "./egress-tls-bridge.js";

export interface EgressProxySettings {
  /** Ranges refused whatever a grant says (cluster ranges, ...). */
  denyCidrs: readonly string[];
  /** When non-empty, the only destination ports allowed. */
  allowPorts?: readonly number[];
  /** Connections (tunnels and forwarded requests) one sandbox may have open at once. */
  maxTunnelsPerSandbox: number;
  /** Resolving and connecting, together. */
  connectTimeoutMs: number;
  /** A connection with no traffic either way for this long is closed. */
  idleTimeoutMs: number;
}

export interface EgressUsage {
  /** Bytes the sandbox sent out (request bodies and tunnelled data; HTTP headers included for plain HTTP). */
  sentBytes: number;
  receivedBytes: number;
  /** Connections made on the sandbox's behalf. */
  connections: number;
  /** Requests refused (policy, bounds, unreachable). */
  refused: number;
}

export interface EgressProxyOptions {
  settings: EgressProxySettings;
  log: Logger;
  /** Defaults to the system resolver (getaddrinfo through dns.lookup, every address). */
  resolve?: EgressResolver;
  /** The gateway host's own addresses, refused unless a grant allows them; defaults to every interface's. */
  hostAddresses?: () => readonly string[];
  /** Called as bytes flow, so the gateway can meter egress while a session runs. */
  onBytes?: (sandboxId: string, sentBytes: number, receivedBytes: number) => void;
  /**
   * Credential injection: the deployment CA's leaf certificates, and the CA certificates
   * (PEM) upstreams are verified against (Node's roots and egress.upstreamCaFiles). Without
   * it, a CONNECT to a host a credential is bound to is refused (503), never tunnelled bare.
   */
  injection?: { leaves: LeafSource; upstreamCa: readonly string[] };
  /**
   * Called each time a grant's credential is added to a request: `secret` the credential's
   * name (never its value), `host` the binding pattern that matched (one of the credential's
   * `hosts`, never the name requested: metric labels stay bounded).
   */
  onCredentialUsed?: (sandboxId: string, secret: string, host: string) => void;
  /** Called for each refused request or connection (audit): the host asked for ("" when none could be read). */
  onRefused?: (sandboxId: string, host: string, reason: string, status: number) => void;
}

export type GrantSource = () => Promise<EgressGrant | undefined>;
