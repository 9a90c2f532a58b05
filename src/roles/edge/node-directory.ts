/**
 * The edge's view of the nodes: the registry read every heartbeat interval, so placing a
 * session or routing a call asks no Redis command of its own. Each refresh also claims the
 * nodes that stopped heart-beating (one edge wins each) and ends their sessions.
 */
import type { Logger } from "pino";
import type { NodeRegistry, NodeView } from "../shared/node-registry.js";

export class NodeDirectory {
  private nodes: NodeView[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly registry: NodeRegistry,
    private readonly options: {
      refreshMs: number;
      log: Logger;
      /** Called for each lost node this edge claimed: end its sessions. */
      onLost: (node: NodeView) => Promise<void>;
    },
  ) {}

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => {
      this.refresh().catch((error) =>
        this.options.log.warn({ err: error }, "could not read the node registry"),
      );
    }, this.options.refreshMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async refresh(): Promise<NodeView[]> {
    const now = Date.now();
    this.nodes = await this.registry.list(now);
    for (const node of this.nodes.filter((candidate) => candidate.state === "lost")) {
      if (await this.registry.claimLost(node.id, now)) {
        this.options.log.warn({ node: node.id, url: node.url }, "node lost: its sessions end");
        await this.options
          .onLost(node)
          .catch((error) =>
            this.options.log.error({ err: error, node: node.id }, "could not end a lost node's sessions"),
          );
      }
    }
    return this.nodes;
  }

  list(): NodeView[] {
    return this.nodes;
  }

  /**
   * Counts a lease this edge just made against its view of the node until the next read:
   * sessions created between two reads must not all go to the node that looked best.
   */
  noteLease(id: string, pool: string, warm: boolean): void {
    const node = this.get(id);
    if (!node) return;
    if (warm) node.freeWarm = { ...node.freeWarm, [pool]: Math.max(0, (node.freeWarm[pool] ?? 0) - 1) };
    node.leased += 1;
  }

  get(id: string): NodeView | undefined {
    return this.nodes.find((node) => node.id === id);
  }
}
