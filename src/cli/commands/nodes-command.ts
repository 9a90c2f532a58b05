/**
 * `sandpool nodes`: the sandbox nodes an edge deployment routes to (state, address, isolation
 * levels, free warm sandboxes and capacity per pool, leased sandboxes, last heartbeat), and an
 * operator's drain: a draining node takes no new lease, its sessions finish or expire (with
 * shared checkpoints, hibernate and resume on other nodes: src/roles/edge/drain-hibernation.ts), then
 * its sandboxes go. Through the admin API. Exit codes: 0 done, 1 refused or unreachable, 2 bad usage.
 */
import { Command } from "commander";
import { type AdminBody, adminCall, adminConnection, type ConnectionOptions } from "../admin/admin-client.js";
import { examples, runAdmin, usageExits, withConnection } from "../admin/admin-command-kit.js";
import { out, printJson, table } from "../admin/admin-render.js";

const PREFIX = "sandpool nodes";

/** A node as the admin API answers it (the type generated from its document). */
type NodeItem = AdminBody<"get", "/admin/v1/nodes">["items"][number];

export function renderNodes(nodes: NodeItem[], now = Date.now()): string {
  if (nodes.length === 0) return "no nodes (one host: --role all, or no node has registered)";
  return table(
    ["NODE", "STATE", "URL", "ISOLATION", "LEASED", "WARM/CAPACITY", "HEARTBEAT"],
    nodes.map((node) => [
      node.id,
      node.state,
      node.url,
      (node.isolation ?? ["container"]).join(","),
      String(node.leased),
      Object.keys(node.capacity)
        .sort()
        .map((pool) => `${pool} ${node.freeWarm[pool] ?? 0}/${node.capacity[pool]}`)
        .join(", "),
      `${Math.max(0, Math.round((now - node.heartbeatAt) / 1000))}s ago`,
    ]),
  );
}

function listCommand(): Command {
  return withConnection(
    new Command("list")
      .summary("show every node: state, address, leased and warm sandboxes, last heartbeat")
      .addHelpText("after", examples("sandpool nodes list", "sandpool nodes list --json")),
  ).action(
    runAdmin(PREFIX, async (options: ConnectionOptions) => {
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "get", "/admin/v1/nodes");
      if (conn.json) return printJson(body);
      out(renderNodes(body.items));
    }),
  );
}

function drainCommand(action: "drain" | "undrain"): Command {
  return withConnection(
    new Command(action)
      .summary(
        action === "drain"
          ? "stop placing sessions on a node; its sessions finish (with shared checkpoints: move), then its sandboxes go"
          : "let a drained node take new sessions again",
      )
      .argument("<id>", "the node's id (sandpool nodes list)")
      .addHelpText("after", examples(`sandpool nodes ${action} sandbox-host-1`)),
  ).action(
    runAdmin(PREFIX, async (id: string, options: ConnectionOptions) => {
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "post", `/admin/v1/nodes/{id}/${action}`, { path: { id } });
      if (conn.json) return printJson(body);
      out(`${action === "drain" ? "draining" : "undrained"} node ${id}\n`);
      out(renderNodes([body]));
    }),
  );
}

export function nodesCommand(): Command {
  return usageExits(
    new Command("nodes")
      .summary("show sandbox nodes and drain or undrain one through the admin API")
      .description(
        "Show the sandbox nodes (--role node) the edges route to, and drain or undrain one, through " +
          "the admin API (/admin/v1/nodes) of an edge, with an admin token.\n\n" +
          "Every sub-command takes --url (env SANDPOOL_URL, default http://127.0.0.1:8080), --token " +
          "(env SANDPOOL_ADMIN_TOKEN) and --json (the raw answer).\n\n" +
          "Exit codes: 0 done, 1 refused by the gateway or unreachable, 2 bad usage.",
      )
      .addCommand(listCommand())
      .addCommand(drainCommand("drain"))
      .addCommand(drainCommand("undrain")),
  );
}
