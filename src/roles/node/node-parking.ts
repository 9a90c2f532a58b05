/**
 * Sandbox reuse on a node (roles edge and node): a session's end parks its sandbox, scrubbed,
 * for its workspace's next session on this node, as one host parks it in the pool ledger
 * (src/pool/sandbox-reuse.ts, whose bounds, scrub and expiry this uses unchanged). What
 * differs is where parked sandboxes are kept: in this node's memory, in the warm pool they
 * came from (node-warm-pool.ts), set aside there so they keep their place against this
 * node's share of the pool and are lent to their owner alone.
 *
 * - `park`: the edge's recycle call (node-api.ts). Refused while draining.
 * - `take`: a lease of the owner's takes its newest parked sandbox first, or waits briefly
 *   for one being scrubbed here (warm-up starts one more sandbox meanwhile), unless the
 *   workspace's policy turns reuse off.
 * - A lease of another workspace, or warm-up to min, that wants a place at max destroys the
 *   longest-parked one (warm-set.ts); parked and unused for PARKED_IDLE_MS, one is destroyed.
 *
 * Nothing of it survives a restart: the node's reconciliation destroys what no live lease
 * holds, parked sandboxes included, and the workspace's next session starts as usual.
 */
import type { Logger } from "pino";
import type { SandboxClient } from "../../forward/sandbox-client.js";
import { type ParkingLot, RECYCLE_WAIT_MS, SandboxReuse } from "../../pool/sandbox-reuse.js";
import type { SandboxRuntime } from "../../runtime/sandbox-runtime.js";
import type { SandboxRecord } from "../../store/coordination/records.js";
import type { NodeWarmPool } from "./node-warm-pool.js";

/** How often parked sandboxes are looked at for expiry. */
const EXPIRY_RUN_MS = 30_000;

export interface NodeParkingDeps {
  pools: ReadonlyMap<string, NodeWarmPool>;
  runtime: Pick<SandboxRuntime, "recyclable" | "usage">;
  client: Pick<SandboxClient, "recycleSandbox">;
  log: Logger;
  /** The leased record of a sandbox held here (the warm pool's own object). */
  held(sandboxId: string): SandboxRecord | undefined;
  /** Stops holding a sandbox for its session: it is parked now. */
  release(sandboxId: string): void;
  now?: () => number;
}

export class NodeParking {
  private readonly reuse: SandboxReuse;
  private readonly expiry: NodeJS.Timeout;

  constructor(private readonly deps: NodeParkingDeps) {
    this.reuse = new SandboxReuse({
      store: this.lot(),
      runtime: deps.runtime,
      client: deps.client,
      log: deps.log,
      now: deps.now ?? Date.now,
    });
    this.expiry = setInterval(() => {
      this.destroyExpired().catch((error) =>
        deps.log.warn({ err: error }, "could not destroy expired parked sandboxes"),
      );
    }, EXPIRY_RUN_MS);
    this.expiry.unref();
  }

  /**
   * Scrubs the held sandbox of `owner`'s ended session and parks it for that workspace's
   * next lease here. False when it may not or could not be reused: the caller destroys it.
   */
  park(record: SandboxRecord, owner: string): Promise<boolean> {
    return this.reuse.park(record, owner);
  }

  /**
   * The newest sandbox parked here for `workspace` in the pool, leased (no longer parked);
   * or, when one is being scrubbed here, that one once it is parked (within RECYCLE_WAIT_MS).
   */
  async take(poolName: string, workspace: string): Promise<SandboxRecord | undefined> {
    const pool = this.deps.pools.get(poolName);
    if (!pool) return undefined;
    const mine = (record: SandboxRecord) => record.owner === workspace;
    const parked = pool.takeParked(mine);
    if (parked || !this.reuse.recyclingFor(poolName, workspace)) return parked;
    // While it waits, warm-up starts one more sandbox: the lease after it may need one.
    const scrubbed = await pool.whileWanting(this.reuse.waitForRecycle(poolName, workspace, RECYCLE_WAIT_MS));
    return scrubbed ? pool.takeParked(mine) : undefined;
  }

  /** Destroys the parked sandboxes unused for PARKED_IDLE_MS: their places go back to the pool. */
  async destroyExpired(): Promise<number> {
    let destroyed = 0;
    for (const [name, pool] of this.deps.pools) {
      for (const record of await this.reuse.takeExpired(name)) {
        await pool
          .destroy(record)
          .catch((error: unknown) =>
            this.deps.log.warn(
              { err: error, sandbox: record.sandboxId },
              "could not destroy a parked sandbox",
            ),
          );
        destroyed++;
      }
    }
    return destroyed;
  }

  close(): void {
    clearInterval(this.expiry);
  }

  /** The warm pools, as the place SandboxReuse parks in and expires from. */
  private lot(): ParkingLot {
    const pools = this.deps.pools;
    return {
      parkIdle: async (parked) => {
        const leased = this.deps.held(parked.sandboxId);
        const pool = pools.get(parked.pool);
        if (!leased || !pool?.park(leased, parked)) return false;
        this.deps.release(parked.sandboxId);
        return true;
      },
      // Newest first, as the pool ledger lists them.
      listParked: async (name) => [...(pools.get(name)?.parkedRecords() ?? [])].reverse(),
      takeParked: async (name, sandboxId) =>
        pools.get(name)?.takeParked((record) => record.sandboxId === sandboxId),
    };
  }
}
