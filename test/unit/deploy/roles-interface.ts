/**
 * What the edge/node interface promises the deployment files (the roles are built in src/ on
 * their own branch, to the same interface): the environment the chart and compose set for
 * each role, and the series edges and nodes export. The deploy tests accept these besides
 * what src/ defines today, so the chart, the rules and the dashboard can cover the roles
 * before the roles' code is merged; once it is, src/ defines them all and this list only
 * repeats it (the tests then check the two agree where src/ knows a name).
 */

/** Variables `sandpool serve` reads for the roles (config keys role and node.*). */
export const ROLE_ENV_VARIABLES = [
  "SANDPOOL_ROLE",
  "SANDPOOL_NODE_HOST",
  "SANDPOOL_NODE_PORT",
  "SANDPOOL_NODE_ADVERTISE_URL",
  "SANDPOOL_NODE_ID",
  "SANDPOOL_NODE_SECRETS",
] as const;

/** The node port's default (SANDPOOL_NODE_PORT). */
export const NODE_PORT = 8091;

/** The roles' series and their own labels (Prometheus adds job and instance). */
export const ROLE_SERIES: ReadonlyMap<string, readonly string[]> = new Map([
  // Gauge, on edges: registered nodes by state (every edge reads the same registry).
  ["sandpool_nodes", ["state"]],
  // Gauge, on nodes: the node's sandboxes per pool and state.
  ["sandpool_node_sandboxes", ["node", "pool", "state"]],
  // Counter, on edges: calls an edge could not route (node unreachable, bad signature, node lost).
  ["sandpool_routing_errors_total", ["reason"]],
  // Counter: nodes found lost (stopped heart-beating).
  ["sandpool_nodes_lost_total", []],
]);
