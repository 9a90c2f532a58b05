/**
 * Starting one sandbox of a pool: its place counted against the pool's cap in the store
 * (marked in flight while it runs, so a replica that dies leaves nothing held), the start
 * itself through the start gate (a burst starts only what the engine absorbs), and what a
 * start teaches: the engine's start rate, the pool's refill time, and on failure the pool's
 * back-off. Shared by leases (cold starts), warm-up and restores (src/pool/pool-manager.ts).
 * The gate, the start rate and the back-off are the warm-pool engine's
 * (src/pool/warm-pool-engine.ts), which a node's pools use too.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { SandboxClient } from "../forward/sandbox-client.js";
import type { PoolSpec, SandboxRuntime, StartedSandbox } from "../runtime/sandbox-runtime.js";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";
import type { SandboxRecord } from "../store/coordination/records.js";
import { cpuBaselineMs } from "./cpu-baseline.js";
import { InFlightMarks } from "./in-flight-marks.js";
import type { PoolDemandAccounting } from "./pool-demand-accounting.js";
import type { StartBackoff } from "./start-backoff.js";
import type { StartGate } from "./start-gate.js";
import type { StartRate } from "./start-rate.js";
import type { WarmPoolEngine } from "./warm-pool-engine.js";

/** Brings a sandbox up under a given id, with its inner session (a fresh start, or a restore). */
export type SandboxBringUp = (
  sandboxId: string,
  deadline: number,
) => Promise<StartedSandbox & { innerSessionId: string }>;

/** Why a sandbox is started: it decides how it is counted and what its failure means. */
export type StartPurpose = "cold" | "warm-up" | "restore";

export interface SandboxStarterDeps {
  store: PoolLedger;
  runtime: SandboxRuntime;
  client: SandboxClient;
  log: Logger;
  now: () => number;
  /** The gate, the start rate and the pools' back-off; it counts and logs failed starts. */
  engine: WarmPoolEngine;
  /** The pool's cap in force (it may change at run time). */
  maxTotalOf: (pool: PoolSpec) => number;
  /** Learns each start's refill time: what sizes warm-up. */
  demand: Pick<PoolDemandAccounting, "recordRefill">;
}

export class SandboxStarter {
  /** Starts in flight here, and the leases that wait for one to end (src/pool/start-gate.ts). */
  readonly gate: StartGate;
  /** The engine's start throughput, from this replica's starts: it bounds warm-up's concurrency. */
  readonly rate: StartRate;
  /** The marks of this replica's starts, renewed while they run. */
  readonly inFlight: InFlightMarks;

  constructor(private readonly deps: SandboxStarterDeps) {
    this.inFlight = new InFlightMarks(deps.store, deps.log, deps.now);
    this.rate = deps.engine.rate;
    this.gate = deps.engine.gate;
  }

  backoffOf(name: string): StartBackoff {
    return this.deps.engine.backoffOf(name);
  }

  /**
   * Starts one sandbox and creates its inner session, for a lease (cold), for the idle
   * queue (warm-up: marked warming until it is pushed idle) or for a restore. Undefined
   * when the pool is at its cap; throws when the start fails (after cleaning up what it
   * started).
   */
  async start(
    pool: PoolSpec,
    purpose: StartPurpose,
    how: { sandboxId: string; bringUp: SandboxBringUp } = {
      sandboxId: randomBytes(12).toString("hex"),
      bringUp: this.freshBringUp(pool),
    },
  ): Promise<SandboxRecord | undefined> {
    const { store, now } = this.deps;
    const { sandboxId } = how;
    const deadline = now() + pool.coldStartTimeoutMs;
    // Counted before the first await: leases of a burst that looked at the gate together
    // must see each other's starts (src/pool/start-gate.ts).
    const startEnded = this.gate.began(pool.name);
    // The start is marked in flight, renewed while it runs: if this replica dies, its place
    // and its container are reclaimed within seconds (src/pool/reclaim-in-flight.ts).
    const counted = await store
      .addMember(pool.name, sandboxId, this.deps.maxTotalOf(pool), deadline + 5_000, now(), {
        warming: purpose === "warm-up",
        inFlightUntil: this.inFlight.until(),
      })
      .catch((error: unknown) => {
        startEnded();
        throw error;
      });
    if (!counted) {
      startEnded();
      return undefined;
    }
    this.inFlight.begin(pool.name, sandboxId);
    let runtimeId: string | undefined;
    const began = process.hrtime.bigint();
    // A restore is not a start of the image: it tells nothing of the engine's start rate.
    const measured = purpose === "restore" ? () => {} : this.rate.began();
    try {
      const started = await how.bringUp(sandboxId, deadline);
      runtimeId = started.runtimeId;
      const cpuBaseMs = await cpuBaselineMs(this.deps.runtime, runtimeId);
      if (purpose !== "restore") {
        this.deps.engine.startSucceeded(pool.name);
        this.deps.demand.recordRefill(pool.name, Number(process.hrtime.bigint() - began) / 1e6);
      }
      return {
        sandboxId,
        pool: pool.name,
        endpoint: started.endpoint,
        runtimeId,
        innerSessionId: started.innerSessionId,
        createdAt: now(),
        ...(cpuBaseMs === undefined ? {} : { cpuBaseMs }),
      };
    } catch (error) {
      if (runtimeId) await this.deps.runtime.destroy(runtimeId).catch(() => undefined);
      await store.removeMember(pool.name, sandboxId);
      // A restore's failure is not the image's: no back-off follows, the caller answers it.
      if (purpose === "restore") throw error;
      throw this.deps.engine.startFailed(pool, error);
    } finally {
      measured();
      this.inFlight.end(pool.name, sandboxId);
      startEnded();
    }
  }

  /** A fresh sandbox of the pool's image, with its inner session created. */
  private freshBringUp(pool: PoolSpec): SandboxBringUp {
    return async (sandboxId, deadline) => {
      const started = await this.deps.runtime.start({ sandboxId, pool, deadline });
      try {
        const innerSessionId = await this.deps.client.createInnerSession(
          started.endpoint,
          Math.max(1, deadline - this.deps.now()),
        );
        return { ...started, innerSessionId };
      } catch (error) {
        await this.deps.runtime.destroy(started.runtimeId).catch(() => undefined);
        throw error;
      }
    };
  }
}
