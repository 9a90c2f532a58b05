/**
 * `sandpool serve --role node` and `--role edge` of one serve deployment, on loopback: what
 * the edge-and-node suites start (test/integration/nodes/). Each node gets a free port it
 * advertises; every server shares the deployment's environment and the node secret.
 */
import { mintToken } from "../../src/auth/dev-keys.js";
import { type CliServer, startCliServer } from "./cli.js";
import { freePort } from "./dev-cli-gateway.js";
import { SERVE_AUDIENCE, SERVE_SECRET, type ServeDeployment } from "./serve-deployment.js";

/**
 * A node serving the deployment's pools, as `id`, on a free loopback port; `configFile`
 * replaces the deployment's (a node of its own, e.g. with a node-local checkpoint directory).
 */
export async function startNodeServer(
  deployment: ServeDeployment,
  id: string,
  secret: string,
  options: { configFile?: string } = {},
): Promise<CliServer> {
  const port = await freePort();
  const configFile = options.configFile ?? deployment.configFile;
  return startCliServer(["serve", "--role", "node", "--config", configFile], undefined, {
    env: {
      ...deployment.env,
      SANDPOOL_NODE_SECRETS: secret,
      SANDPOOL_NODE_ID: id,
      SANDPOOL_NODE_HOST: "127.0.0.1",
      SANDPOOL_NODE_PORT: String(port),
      SANDPOOL_NODE_ADVERTISE_URL: `http://127.0.0.1:${port}`,
    },
    timeoutMs: 90_000,
  });
}

/** An edge routing to the deployment's nodes. */
export function startEdgeServer(deployment: ServeDeployment, secret: string): Promise<CliServer> {
  return startCliServer(["serve", "--role", "edge", "--config", deployment.configFile], undefined, {
    env: { ...deployment.env, SANDPOOL_NODE_SECRETS: secret },
    timeoutMs: 60_000,
  });
}

/** An admin API answer: its status and JSON body. */
export interface AdminAnswer {
  status: number;
  body: Record<string, unknown>;
}

/**
 * An operator's admin calls through the edge at `url()` (read on each call: the edge may be
 * started after this is made), with an admin token of the serve deployment.
 */
export async function edgeAdmin(
  url: () => string,
): Promise<(method: string, route: string, body?: unknown) => Promise<AdminAnswer>> {
  const token = await mintToken({
    secret: SERVE_SECRET,
    audience: SERVE_AUDIENCE,
    workspace: "ops",
    admin: true,
  });
  return async (method, route, body) => {
    const answer = await fetch(`${url()}/admin/v1${route}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await answer.text();
    return { status: answer.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
}
