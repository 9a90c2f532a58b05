/**
 * The pool family as the rest of the gateway sees it: one interface, implemented by the
 * local pools (pool-manager.ts: sandboxes on this host's runtime) and by the edge's routed
 * pools (src/roles/edge/routed-pools.ts: sandboxes on nodes). The session lifecycle leases
 * and gives back through `SandboxPool`; the pool status and the demand exchange between
 * replicas read `PoolFigures`.
 */
import type { PoolSpec, SandboxUsage } from "../runtime/sandbox-runtime.js";
import type { PoolStartFailure } from "../store/coordination/pool-demand-exchange.js";
import type { MemberHold, SandboxRecord } from "../store/coordination/records.js";
import type { PoolDemandAccounting } from "./pool-demand-accounting.js";
import type { PoolSizes } from "./pool-sizes.js";
import type { StartRateView } from "./start-rate.js";

/** A lease waiting for places turning over looks again after this at most. */
export const LEASE_POLL_MAX_MS = 200;

/**
 * How long a lease waits its turn at the start gate by default: a burst of 100 on a fresh
 * pool is served at the engine's start rate, about a minute on two cores, and a lease served
 * late is better than a 503 (Otari does not retry one: the contract's "At capacity").
 */
export const START_QUEUE_TIMEOUT_MS = 120_000;

/** How long a lease from `pool` waits its turn at the start gate before a 503. */
export function startQueueTimeoutMsOf(pool: Pick<PoolSpec, "startQueueTimeoutMs">): number {
  return pool.startQueueTimeoutMs ?? START_QUEUE_TIMEOUT_MS;
}

/**
 * The longest a lease from `pool` may take: its turn at the start gate, a wait for places
 * turning over (the pool's cold-start deadline, and one more poll) and then a cold start of
 * its own. What a session's slot and pool place must be held for beyond the session's
 * lifetime.
 */
export function leaseBudgetMs(pool: PoolSpec): number {
  return startQueueTimeoutMsOf(pool) + 2 * pool.coldStartTimeoutMs + LEASE_POLL_MAX_MS;
}

/** What a lease from a pool would get now (`SandboxPool.capacity`). */
export interface PoolCapacity {
  pool: string;
  /** `wait`: at the cap, but a warm-up start or a destroy under way will give the lease a sandbox. */
  outcome: "warm" | "cold" | "wait" | "exhausted";
  idle: number;
  /** Sandboxes counted against maxTotal (idle, leased, starting); on an edge, the nodes' capacity in use. */
  members: number;
  maxTotal: number;
  detail: string;
}

export interface LeasedSandbox {
  record: SandboxRecord;
  warm: boolean;
  /** It served an earlier session of the same workspace (src/pool/sandbox-reuse.ts). */
  reused: boolean;
}

/** A sandbox as far as destroying it goes: which pool, which one, and where (a node's, on an edge). */
export type RetiringSandbox = Pick<SandboxRecord, "pool" | "sandboxId" | "runtimeId"> & {
  node?: string;
  endpoint?: string;
};

/** What the session lifecycle needs of the pools, from lease to release. */
export interface SandboxPool {
  list(): PoolSpec[];
  /** The longest a lease may take (see `leaseBudgetMs`). */
  leaseBudgetMs(pool: PoolSpec): number;
  /** A ready sandbox for one session, or 503 `capacity.exhausted`. */
  lease(pool: PoolSpec, hold: MemberHold): Promise<LeasedSandbox>;
  /** What `lease` would do now, taking nothing (explain). */
  capacity(pool: PoolSpec): Promise<PoolCapacity>;
  /** Keeps a cold-started sandbox counted against its pool until `hold.until`. */
  holdMembership(record: SandboxRecord, hold: MemberHold): Promise<void>;
  /** Tops one pool up (a no-op where others keep pools warm). */
  warm(pool: PoolSpec): Promise<void>;
  warmAll(): Promise<void>;
  /** What a sandbox used, measured outside it; never throws, never waits long. */
  usageOf(record: RetiringSandbox): Promise<SandboxUsage | undefined>;
  /**
   * Says, as `owner`'s session ends, that its sandbox's recycle is coming (the settle job's),
   * so a lease of that workspace waits for it rather than cold-starting. A no-op where the
   * scrub happens elsewhere (an edge's nodes).
   */
  expectRecycle(record: SandboxRecord, owner: string): void;
  /** Parks the sandbox of `owner`'s ended session for its next one; false: destroy it. */
  recycle(record: SandboxRecord, owner: string): Promise<boolean>;
  /** Marks a sandbox about to be destroyed, so a lease at the cap waits for its place. */
  markRetiring(record: Pick<SandboxRecord, "pool" | "sandboxId">): Promise<void>;
  /** Destroys a sandbox and frees its place. Idempotent. */
  retire(record: RetiringSandbox): Promise<void>;
}

/** What the pool status and the demand exchange read of the pools. */
export interface PoolFigures {
  list(): PoolSpec[];
  /** This replica's demand accounting. */
  readonly demand: PoolDemandAccounting;
  /** The sizes in force for a pool. */
  sizeOf(pool: PoolSpec): PoolSizes;
  /** The minIdle warm-up keeps: the size in force, raised by the deployment's demand. */
  effectiveMinIdle(pool: PoolSpec): number;
  /** The engine's start throughput as this replica measured it. */
  startRateView(): StartRateView;
  /** The failed start a pool is backing off from, newest. */
  startFailureOf(name: string): PoolStartFailure | undefined;
  /** Counts for the pool gauges. */
  refreshGauges(): Promise<void>;
}

/** The pools a gateway serves from: local or routed. */
export type GatewayPools = SandboxPool & PoolFigures;
