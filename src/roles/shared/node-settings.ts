/**
 * Settings of the edge and node roles (docs/architecture.md, "Roles: edge and node"). A node
 * listens for the node API on `host:port` and advertises `advertiseUrl` to the edges;
 * `secrets` authenticate edge and node to each other (the first signs, every one verifies).
 */
import { createHash } from "node:crypto";
import { hostname } from "node:os";
import { z } from "zod";
import { settingDocs } from "../../contract/setting-docs.js";

/** Secrets shorter than this are refused by serve: HMAC-SHA256 keys want 32 bytes of entropy. */
export const MIN_NODE_SECRET_BYTES = 32;

export const nodeSettingsSchema = z
  .strictObject({
    /** Address of the node API listener (role node). */
    host: z
      .string()
      .min(1)
      .default("0.0.0.0")
      .register(settingDocs, {
        doc: "Address of the node API listener (role node).",
        env: { name: "SANDPOOL_NODE_HOST", description: "address of the node API listener (role node)" },
      }),
    port: z
      .number()
      .int()
      .min(0)
      .max(65_535)
      .default(8091)
      .register(settingDocs, {
        doc: "Port of the node API listener (role node); edges only need to reach it.",
        env: { name: "SANDPOOL_NODE_PORT", description: "port of the node API listener (role node)" },
      }),
    /** How edges reach this node's API, e.g. http://10.0.0.5:8091 (required for role node). */
    advertiseUrl: z
      .url({ protocol: /^https?$/ })
      .optional()
      .register(settingDocs, {
        doc: "URL edges reach this node's API at (required for role node).",
        example: "http://10.0.0.5:8091",
        env: {
          name: "SANDPOOL_NODE_ADVERTISE_URL",
          description:
            "URL edges reach this node's API at, e.g. http://10.0.0.5:8091 (required for role node)",
        },
      }),
    /** This node's id in the registry: the host name unless set (in Kubernetes, the node name). */
    id: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, "letters, digits, '.', '-' and '_'")
      .optional()
      .register(settingDocs, {
        doc: "This node's id in the registry; unset: the host name.",
        example: "sandbox-host-1",
        env: {
          name: "SANDPOOL_NODE_ID",
          description: "this node's id in the registry (default: the host name)",
        },
      }),
    /** Shared secrets of edges and nodes: the first signs, all verify (rotation). */
    secrets: z
      .array(z.string().min(1))
      .default([])
      .register(settingDocs, {
        doc: "Shared secrets (32 bytes or more): the first signs, every one verifies. Rotate: add the new one second, move it first, drop the old.",
        example: ["change-me-to-32-bytes-or-more-0123456789"],
        env: {
          name: "SANDPOOL_NODE_SECRETS",
          description:
            "edge/node shared secrets, 32 bytes or more, comma-separated: the first signs, all verify",
        },
      }),
    /** How often a node renews its registry entry. */
    heartbeatMs: z
      .number()
      .int()
      .min(100)
      .default(2_000)
      .register(settingDocs, { doc: "How often a node renews its registry entry." }),
    /** A node whose entry is older than this is lost: its sessions end. */
    lostAfterMs: z
      .number()
      .int()
      .min(500)
      .default(10_000)
      .register(settingDocs, { doc: "A node silent this long is lost: its sessions end (node_lost)." }),
    /** Requests signed further from the verifier's clock than this are refused. */
    clockWindowMs: z.number().int().min(1_000).default(30_000).register(settingDocs, {
      doc: "Signed requests further than this from the receiver's clock are refused.",
    }),
    /** How long a node API request's headers may take to arrive (role node). */
    headersTimeoutMs: z
      .number()
      .int()
      .min(100)
      .default(10_000)
      .register(settingDocs, { doc: "A node API request whose headers take longer is cut (role node)." }),
    /** How long a signed request's buffered body (a lease, an Execute) may take to arrive. */
    bodyTimeoutMs: z.number().int().min(100).default(30_000).register(settingDocs, {
      doc: "A signed request's buffered body (a lease, an Execute) must arrive within this.",
    }),
    /** How long a whole node API request may take, an upload included (the edge's transfers take 30 min). */
    requestTimeoutMs: z
      .number()
      .int()
      .min(1_000)
      .default(31 * 60_000)
      .register(settingDocs, {
        doc: "A whole node API request, an upload included, must arrive within this.",
      }),
    /** Connections the node API holds open at once; more are closed as they come. */
    maxConnections: z.number().int().min(1).default(1_024).register(settingDocs, {
      doc: "Connections the node API holds open at once; more are closed as they come.",
    }),
  })
  .prefault({})
  .refine((node) => node.lostAfterMs >= node.heartbeatMs * 2, {
    message: "lostAfterMs must be at least twice heartbeatMs: one late heartbeat must not lose a node",
    path: ["lostAfterMs"],
  })
  .refine((node) => node.headersTimeoutMs <= node.requestTimeoutMs, {
    message: "headersTimeoutMs must not exceed requestTimeoutMs",
    path: ["headersTimeoutMs"],
  });

export type NodeSettings = z.output<typeof nodeSettingsSchema>;

/** The node's id: as configured, else the host name (a Kubernetes node name is one). */
export function nodeIdOf(settings: Pick<NodeSettings, "id">): string {
  return settings.id ?? hostname();
}

/**
 * The `sandpool.owner` label of a node's sandboxes (DockerRuntime's `owner`): its id folded to
 * what a label and a folder name take (lower case, at most 63), with a hash of the id so two ids
 * that fold alike stay apart. Nodes that share an engine (a test machine, the compose example)
 * then each list, reconcile and reap only their own sandboxes.
 */
export function nodeSandboxOwner(nodeId: string): string {
  const hash = createHash("sha256").update(nodeId).digest("hex").slice(0, 8);
  const folded = nodeId
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^[-_]+/, "")
    .slice(0, 63 - hash.length - 1);
  return folded === "" ? hash : `${folded}-${hash}`;
}
