/**
 * What the node API's routes are given: the API's dependencies and limits, and one
 * authenticated call (src/roles/node/node-api.ts serves them, src/roles/node/node-relay.ts relays them).
 */
import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { SandboxClient } from "../../forward/sandbox-client.js";
import type { NodeSecrets, RequestVerifier } from "../shared/node-signature.js";
import type { NodeHibernation } from "./node-hibernation.js";
import type { NodeSandboxes } from "./node-sandboxes.js";
import type { SignedAnswer } from "./signed-answer.js";

export interface NodeApiLimits {
  /** Most bytes of a buffered (non-streamed) request body. */
  maxBodyBytes: number;
  /** How long a buffered body may take to arrive, once its head is signed. */
  bodyTimeoutMs: number;
  /** How long a request's headers may take (node:http `headersTimeout`). */
  headersTimeoutMs: number;
  /** How long a whole request may take, upload included (node:http `requestTimeout`). */
  requestTimeoutMs: number;
  /** Connections open at once; more are closed as they come (node:http `maxConnections`). */
  maxConnections: number;
}

export interface NodeApiDeps {
  sandboxes: NodeSandboxes;
  /** Checkpoints and restores for hibernating sessions, where the node's runtime can (node-hibernation.ts). */
  hibernation?: NodeHibernation;
  client: SandboxClient;
  secrets: NodeSecrets;
  verifier: RequestVerifier;
  metrics: Registry;
  /** The bearer token /metrics requires (`metrics.token`); unset, /metrics answers anyone. */
  /** The check of `/metrics`' bearer token (src/service-operations/metrics-token.ts), when one is configured. */
  metricsToken?: { accepts(authorization: string | undefined): boolean };
  log: Logger;
  ready: () => boolean;
  limits: NodeApiLimits;
  /** Signature refusals, counted by reason. */
  refused?: (reason: string) => void;
}

/** An authenticated call, its body checked or verifying as it streams. */
export interface NodeCall {
  deps: NodeApiDeps;
  req: IncomingMessage;
  answer: SignedAnswer;
  /** The path's captures (a sandbox id, a relayed path). */
  params: string[];
  /** Path and query as requested. */
  target: string;
  /** The workspace the edge made the call for (signed); undefined when it named none. */
  workspace: string | undefined;
  /** A buffered body's checked bytes, or a framed body's verified stream. */
  body: Buffer | Readable;
}
