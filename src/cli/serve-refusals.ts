/**
 * What `sandpool serve` refuses to run with, although the configuration itself is valid
 * (dev mode accepts it): each refusal names the setting and why, so the operator can fix
 * them all at once. Checked before any backend is contacted.
 */
import type { AuthConfig } from "../auth/auth-config.js";
import type { IntrospectionConfig } from "../auth/introspection-config.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import { MIN_NODE_SECRET_BYTES } from "../roles/shared/node-settings.js";

type AuthChecked = Pick<AuthConfig, "audience" | "anyAudience"> & {
  introspection?: Pick<IntrospectionConfig, "audience" | "allowedClientIds" | "anyAudience">;
};

type ServeChecked = Pick<GatewayConfig, "runtime"> & {
  /** Absent on a node, which verifies no bearer token. */
  auth?: AuthChecked;
  role?: GatewayConfig["role"];
  node?: Pick<GatewayConfig["node"], "advertiseUrl" | "secrets">;
};

export function refusedForServe(config: ServeChecked): string[] {
  const role = config.role ?? "all";
  const refused: string[] = [];
  if (role === "node" && config.runtime.kind !== "docker") {
    refused.push(
      "role is node but runtime.kind is process: a node owns its host's Docker engine (DOCKER_HOST, or " +
        "runtime.docker.hosts); run it where an engine is",
    );
  }
  if (role !== "all") refused.push(...refusedSecrets(role, config.node?.secrets ?? []));
  if (role === "node" && !config.node?.advertiseUrl) {
    refused.push(
      "node.advertiseUrl is not set (SANDPOOL_NODE_ADVERTISE_URL): a node must say where edges reach its " +
        "API, e.g. http://10.0.0.5:8091",
    );
  }
  if (config.runtime.kind === "process" && role === "all") {
    refused.push(
      "runtime.kind is process (SANDPOOL_RUNTIME or the configuration file): serve refuses the process " +
        "runtime, which runs user code as the gateway's own user, able to read its secrets (the token key, " +
        "database and Redis URLs); it is a dev-mode convenience only (`sandpool dev`). Use runtime.kind: docker",
    );
  }
  // A node verifies no bearer token: the edges do, and sign what they send it.
  if (role !== "node" && config.auth) refused.push(...refusedAudiences(config.auth));
  return refused;
}

/** Tokens checked without an audience: any token of the issuer, whatever service it was for. */
function refusedAudiences(auth: AuthChecked): string[] {
  const refused: string[] = [];
  if (auth.audience === undefined && !auth.anyAudience) {
    refused.push(
      "auth.audience is not set: without it a token your issuer minted for any other service is accepted " +
        "here. Set auth.audience (SANDPOOL_JWT_AUDIENCE), or auth.anyAudience: true " +
        "(SANDPOOL_JWT_ANY_AUDIENCE) if every token of this issuer is meant for sandpool",
    );
  }
  const introspection = auth.introspection;
  if (
    introspection &&
    introspection.audience === undefined &&
    introspection.allowedClientIds === undefined &&
    !introspection.anyAudience
  ) {
    refused.push(
      "auth.introspection.audience is not set: without it (or allowedClientIds) any active token of the " +
        "introspection endpoint's server is accepted here, whichever service it was issued for. Set " +
        "auth.introspection.audience (SANDPOOL_INTROSPECTION_AUDIENCE) or allowedClientIds " +
        "(SANDPOOL_INTROSPECTION_ALLOWED_CLIENT_IDS), or auth.introspection.anyAudience: true " +
        "(SANDPOOL_INTROSPECTION_ANY_AUDIENCE) if every token of that server is meant for sandpool",
    );
  }
  return refused;
}

function refusedSecrets(role: "edge" | "node", secrets: readonly string[]): string[] {
  if (secrets.length === 0) {
    return [
      `node.secrets is not set (SANDPOOL_NODE_SECRETS): a${role === "edge" ? "n edge" : " node"} authenticates ` +
        "edges and nodes to each other with a shared secret of 32 bytes or more",
    ];
  }
  return secrets.flatMap((secret, index) =>
    Buffer.byteLength(secret) < MIN_NODE_SECRET_BYTES
      ? [
          `node.secrets[${index}] is ${Buffer.byteLength(secret)} bytes: edge/node secrets need ` +
            `${MIN_NODE_SECRET_BYTES} bytes or more (e.g. \`openssl rand -hex 32\`)`,
        ]
      : [],
  );
}

/** What serve accepts but says, so an operator is not surprised (logged at start-up). */
export function noticesForServe(
  config: Pick<GatewayConfig, "role" | "runtime"> & Partial<Pick<GatewayConfig, "auth" | "databaseUrl">>,
): string[] {
  if (config.role === "edge" && config.runtime.docker !== undefined) {
    return [
      "role is edge: the configured Docker engine (DOCKER_HOST or runtime.docker) is not used; " +
        "sandboxes run on the nodes",
    ];
  }
  // Unused, and the worst things a sandbox that escaped onto the node could find there.
  const unused = [
    ...(config.auth ? ["the token key source (auth)"] : []),
    ...(config.databaseUrl ? ["DATABASE_URL"] : []),
  ];
  if (config.role === "node" && unused.length > 0) {
    return [
      `role is node: not used here, so keep off nodes (a sandbox escape there would find it): ${unused.join(", ")}`,
    ];
  }
  return [];
}
