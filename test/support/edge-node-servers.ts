/**
 * `sandpool serve --role node` and `--role edge` of one serve deployment, on loopback: what
 * the edge-and-node suites start (test/integration/nodes/). Each node gets a free port it
 * advertises; every server shares the deployment's environment and the node secret.
 */
import { type CliServer, startCliServer } from "./cli.js";
import { freePort } from "./dev-cli-gateway.js";
import type { ServeDeployment } from "./serve-deployment.js";

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
