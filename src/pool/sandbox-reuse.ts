/**
 * Sandbox reuse: a session's end gives its sandbox, scrubbed, to its workspace's next
 * session instead of destroying it, so a workspace's session churn costs no container start
 * (Otari opens one session per chat request; an engine starts about two containers a second).
 *
 * The tenant boundary stays the container: a parked sandbox carries its `owner` and only a
 * lease of that workspace takes it (the ledger's `leaseIdle`). The sandbox server's scrub
 * (src/sandbox/sessions/scrub-sandbox.ts) kills every process, removes IPC objects and
 * empties every place user code can write, then creates the next session with a fresh
 * interpreter; any failure destroys the sandbox instead. Reuse is bounded: a sandbox serves
 * at most its share of MAX_USES sessions and lives at most its share of MAX_AGE_MS
 * (`reuseBoundsOf`); parked and unused for
 * PARKED_IDLE_MS, it is destroyed, and a lease of another workspace that finds the pool at its
 * cap takes the place of the longest-parked one.
 *
 * Where parked sandboxes are kept is the caller's: the pool ledger in Redis on one host
 * (pool-manager.ts), a node's own memory with roles edge and node
 * (src/roles/node/node-parking.ts). Both park, bound and expire through this class.
 */
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import type { SandboxClient } from "../forward/sandbox-client.js";
import type { SandboxRuntime } from "../runtime/sandbox-runtime.js";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";
import type { SandboxRecord } from "../store/coordination/records.js";
import { cpuBaselineMs } from "./cpu-baseline.js";
import { RecyclesInFlight } from "./recycles-in-flight.js";

/**
 * The most sessions one sandbox serves, and the longest it lives. What a scrub cannot see (a
 * slow leak in the server, state in the kernel it does not check) lasts no longer than this.
 * Each sandbox's own bounds lie between half these and these (`reuseBoundsOf`).
 */
export const MAX_USES = 1_000;
export const MAX_AGE_MS = 60 * 60_000;
export const PARKED_IDLE_MS = 5 * 60_000;
/** A scrub kills, deletes and starts an interpreter (and preloads its modules): seconds at most. */
const RECYCLE_TIMEOUT_MS = 30_000;
/**
 * Longest a lease waits for its workspace's sandbox being scrubbed before it cold-starts one:
 * a scrub forks an interpreter in tens of milliseconds, a loaded machine's in hundreds; a
 * cold start takes longer than this whatever the load.
 */
export const RECYCLE_WAIT_MS = 1_000;
/**
 * How long a session's end says its sandbox's scrub is on its way (`expect`) before the
 * settle job takes it up: that job first reads the sandbox's usage, and may run on another
 * replica, where this one's word lapses.
 */
export const EXPECTED_RECYCLE_MS = 10_000;
/**
 * How long a park waits for the sandbox's CPU reading, the next session's baseline. Off any
 * call's path (the settle job), so long enough for Docker's stats API, which samples for a
 * second, where the cgroup files are not visible.
 */
const PARK_BASELINE_TIMEOUT_MS = 3_000;

/**
 * One sandbox's bounds: its uses and age limits, each between half of MAX_USES (MAX_AGE_MS)
 * and all of it, drawn from its id so every replica and node reads the same. The same bound
 * for all would retire together the sandboxes a busy workspace gained together (a pool
 * warmed at once, then sharing one workspace's sessions evenly): a wave of container starts
 * while the workspace waits. Spread, they retire one at a time.
 */
export function reuseBoundsOf(sandboxId: string): { uses: number; ageMs: number } {
  const digest = createHash("sha256").update(sandboxId).digest();
  const spread = (max: number, at: number) =>
    Math.floor(max / 2 + ((max / 2) * digest.readUInt16BE(at)) / 0x10000);
  return { uses: spread(MAX_USES, 0), ageMs: spread(MAX_AGE_MS, 2) };
}

/** Where parked sandboxes are kept: what reuse needs of the pool ledger. */
export type ParkingLot = Pick<PoolLedger, "parkIdle" | "listParked" | "takeParked">;

export interface SandboxReuseDeps {
  store: ParkingLot;
  runtime: Pick<SandboxRuntime, "recyclable" | "usage" | "resetMemoryPeak">;
  client: Pick<SandboxClient, "recycleSandbox">;
  log: Logger;
  now: () => number;
}

export class SandboxReuse {
  /** This replica's scrubs under way: a lease of their workspace may wait for one (waitForRecycle). */
  private readonly recycles = new RecyclesInFlight();
  /** Scrubs announced by a session's end and not yet begun, by sandbox id: each ends its count once. */
  private readonly expected = new Map<string, () => void>();

  constructor(private readonly deps: SandboxReuseDeps) {}

  /**
   * Waits, at most `ms`, for one of `workspace`'s sandboxes being scrubbed here to be parked
   * (or destroyed): true when one ended, so the lease looks again; false at once when none is.
   */
  waitForRecycle(pool: string, workspace: string, ms: number): Promise<boolean> {
    return this.recycles.waitForOne(pool, workspace, ms);
  }

  /** Whether one of `workspace`'s sandboxes in `pool` is being scrubbed here now. */
  recyclingFor(pool: string, workspace: string): boolean {
    return this.recycles.count(pool, workspace) > 0;
  }

  /**
   * Counts the coming scrub of `record` (its session just ended) as under way from now, not
   * from when the settle job gets to it: a lease of its workspace meanwhile waits for it
   * rather than cold-starting. Ends when `park` takes it up, or after EXPECTED_RECYCLE_MS.
   */
  expect(record: SandboxRecord, owner: string): void {
    if (!this.mayReuse(record) || this.expected.has(record.sandboxId)) return;
    const ended = this.recycles.begin(record.pool, owner);
    const finish = () => {
      clearTimeout(lapse);
      if (this.expected.get(record.sandboxId) === finish) this.expected.delete(record.sandboxId);
      ended();
    };
    const lapse = setTimeout(finish, EXPECTED_RECYCLE_MS);
    lapse.unref();
    this.expected.set(record.sandboxId, finish);
  }

  /** Whether `record` may serve another session of its workspace now. */
  mayReuse(record: SandboxRecord): boolean {
    const bounds = reuseBoundsOf(record.sandboxId);
    return (
      this.deps.runtime.recyclable === true &&
      record.neverReuse !== true &&
      (record.uses ?? 0) + 1 < bounds.uses &&
      this.deps.now() - record.createdAt < bounds.ageMs
    );
  }

  /**
   * Scrubs the sandbox of `owner`'s ended session and parks it for that workspace's next
   * lease. False when it may not or could not be reused (the caller destroys it): never throws.
   */
  async park(record: SandboxRecord, owner: string): Promise<boolean> {
    // The count its end began (expect) carries on as this scrub's, or a new one begins.
    const expected = this.expected.get(record.sandboxId);
    this.expected.delete(record.sandboxId);
    if (!this.mayReuse(record)) {
      expected?.();
      return false;
    }
    if (record.owner !== undefined && record.owner !== owner) {
      // Cannot happen through leaseIdle; refused here too, as the boundary it is.
      this.deps.log.error({ sandbox: record.sandboxId, owner, was: record.owner }, "a sandbox changed owner");
      expected?.();
      return false;
    }
    const ended = expected ?? this.recycles.begin(record.pool, owner);
    try {
      const innerSessionId = await this.deps.client.recycleSandbox(record.endpoint, RECYCLE_TIMEOUT_MS);
      const baseline = await this.usageBaseline(record);
      if (!baseline) return false;
      const now = this.deps.now();
      const { cpuBaseMs: _earlier, memoryPeakCarried: _carried, ...rest } = record;
      const parked: SandboxRecord = {
        ...rest,
        ...baseline,
        innerSessionId,
        owner,
        uses: (record.uses ?? 0) + 1,
        parkedAt: now,
      };
      // A parked sandbox counts against its pool until it is taken or expires.
      return await this.deps.store.parkIdle(parked, { until: now + PARKED_IDLE_MS * 2, now });
    } catch (error) {
      this.deps.log.warn({ err: error, sandbox: record.sandboxId }, "a sandbox could not be recycled");
      return false;
    } finally {
      // After parkIdle: a lease woken here finds the sandbox parked.
      ended();
    }
  }

  /**
   * The next session's usage starts here, after the scrub: nothing of the earlier session,
   * nor the scrub, is its own. Its CPU is counted from the reading now; its memory peak is
   * started anew where the kernel allows, else marked as carried (the session records none).
   * Undefined when the runtime measures CPU but gave no reading: a baseline that cannot be
   * had would charge the next session every earlier one's CPU, so the sandbox is not reused.
   */
  private async usageBaseline(
    record: SandboxRecord,
  ): Promise<Pick<SandboxRecord, "cpuBaseMs" | "memoryPeakCarried"> | undefined> {
    const { runtime } = this.deps;
    const peakReset = (await runtime.resetMemoryPeak?.(record.runtimeId).catch(() => false)) ?? false;
    const cpuBaseMs = await cpuBaselineMs(runtime, record.runtimeId, PARK_BASELINE_TIMEOUT_MS);
    if (runtime.usage && cpuBaseMs === undefined) {
      this.deps.log.warn(
        { sandbox: record.sandboxId },
        "no CPU reading of a scrubbed sandbox: it is destroyed, not reused",
      );
      return undefined;
    }
    return {
      ...(cpuBaseMs === undefined ? {} : { cpuBaseMs }),
      ...(peakReset || !runtime.usage ? {} : { memoryPeakCarried: true as const }),
    };
  }

  /** Takes the pool's parked sandboxes unused for PARKED_IDLE_MS, for the caller to destroy. */
  async takeExpired(pool: string): Promise<SandboxRecord[]> {
    const now = this.deps.now();
    const expired: SandboxRecord[] = [];
    for (const record of await this.deps.store.listParked(pool)) {
      if (now - (record.parkedAt ?? 0) < PARKED_IDLE_MS) continue;
      const taken = await this.deps.store.takeParked(pool, record.sandboxId);
      if (taken) expired.push(taken);
    }
    return expired;
  }
}
