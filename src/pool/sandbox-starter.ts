/**
 * Starting one sandbox of a pool: its place counted against the pool's cap in the store
 * (marked in flight while it runs, so a replica that dies leaves nothing held), the start
 * itself through the start gate (a burst starts only what the engine absorbs), and what a
 * start teaches: the engine's start rate, the pool's refill time, and on failure the pool's
 * back-off. Shared by leases (cold starts), warm-up and restores (src/pool/pool-manager.ts).
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import type { SandboxClient } from "../forward/sandbox-client.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { PoolSpec, SandboxRuntime, StartedSandbox } from "../runtime/sandbox-runtime.js";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";
import type { SandboxRecord } from "../store/coordination/records.js";
import { cpuBaselineMs } from "./cpu-baseline.js";
import { InFlightMarks } from "./in-flight-marks.js";
import type { PoolDemandAccounting } from "./pool-demand-accounting.js";
import { StartBackoff } from "./start-backoff.js";
import { StartGate } from "./start-gate.js";
import { StartRate } from "./start-rate.js";

/** Brings a sandbox up under a given id, with its inner session (a fresh start, or a restore). */
export type SandboxBringUp = (
  sandboxId: string,
  deadline: number,
) => Promise<StartedSandbox & { innerSessionId: string }>;

/** Why a sandbox is started: it decides how it is counted and what its failure means. */
export type StartPurpose = "cold" | "warm-up" | "restore";

export interface SandboxStarterDeps {
  pools: readonly PoolSpec[];
  store: PoolLedger;
  runtime: SandboxRuntime;
  client: SandboxClient;
  metrics: GatewayMetrics;
  log: Logger;
  now: () => number;
  /** The pool's cap in force (it may change at run time). */
  maxTotalOf: (pool: PoolSpec) => number;
  /** Learns each start's refill time and each failure: what sizes warm-up. */
  demand: Pick<PoolDemandAccounting, "recordRefill" | "countWarmupFailure">;
}

export class SandboxStarter {
  /** Starts in flight here, and the leases that wait for one to end (src/pool/start-gate.ts). */
  readonly gate: StartGate;
  /** The engine's start throughput, from this replica's starts: it bounds warm-up's concurrency. */
  readonly rate: StartRate;
  /** The marks of this replica's starts, renewed while they run. */
  readonly inFlight: InFlightMarks;
  private readonly backoff = new Map<string, StartBackoff>();

  constructor(private readonly deps: SandboxStarterDeps) {
    this.inFlight = new InFlightMarks(deps.store, deps.log, deps.now);
    this.rate = new StartRate(deps.now);
    this.gate = new StartGate(this.rate);
    for (const pool of deps.pools) this.backoff.set(pool.name, new StartBackoff());
  }

  backoffOf(name: string): StartBackoff | undefined {
    return this.backoff.get(name);
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
        this.backoff.get(pool.name)!.succeeded(now());
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
      throw this.failed(pool, error);
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

  /** Counts a failed start of the pool's image, backs its warm-up off, and says so once per step. */
  private failed(pool: PoolSpec, error: unknown): SandpoolError {
    this.deps.metrics.warmupFailures.inc({ pool: pool.name });
    this.deps.demand.countWarmupFailure(pool.name);
    const reason = error instanceof Error ? error.message : String(error);
    const { delayMs, newStep } = this.backoff.get(pool.name)!.failed(this.deps.now(), reason);
    // Once per back-off step: starts failing together, or during the wait, are one story.
    if (newStep) {
      this.deps.log.error(
        { err: error, pool: pool.name, retryInMs: delayMs },
        "sandbox start failed; warm-up backs off",
      );
    } else {
      this.deps.log.debug({ err: error, pool: pool.name }, "sandbox start failed during the back-off");
    }
    return new SandpoolError("capacity.exhausted", `no sandbox of the '${pool.name}' pool could be started`, {
      retryAfterSeconds: Math.max(1, Math.ceil(delayMs / 1000)),
      cause: error,
    });
  }
}
