/** What the coordination store keeps about pooled sandboxes and the sessions leased on them. */

/** A started sandbox server, ready to serve one session. */
export interface SandboxRecord {
  sandboxId: string;
  pool: string;
  /** Base URL of its contract-v1 server, as the gateway reaches it. */
  endpoint: string;
  /** The runtime's own handle: a container id, a process id. */
  runtimeId: string;
  /** The session created inside it at warm-up, so a lease needs no further round trip. */
  innerSessionId: string;
  createdAt: number;
  /** The node holding it (roles edge and node); absent on one host (`--role all`). */
  node?: string;
  /**
   * Its CPU time (ms) when it became ready: what its server's start-up burned, which no
   * session is charged for. Absent where the runtime measures none (the process runtime).
   */
  cpuBaseMs?: number;
  /**
   * The workspace whose sessions it has served (a sandbox never serves another): set once it
   * is parked for reuse. Absent on a fresh sandbox.
   */
  owner?: string;
  /**
   * Its cgroup's memory peak may be an earlier session's: it was parked for reuse where the
   * kernel could not start the peak anew (cgroup v2; a cgroup not visible from here), so its
   * session records no memory peak rather than one that may not be its own.
   */
  memoryPeakCarried?: true;
  /** Sessions it has served so far (reuse is bounded); absent: none. */
  uses?: number;
  /** When it was last parked for its owner's next session (epoch ms). */
  parkedAt?: number;
  /**
   * Its server listened again while user code ran (a restore from a checkpoint, or a
   * checkpoint given up): code could have put its own socket in the server's place, so the
   * sandbox serves its session to the end and is then destroyed, never reused.
   */
  neverReuse?: true;
}

/** A client's session: which sandbox serves it, for whom, and until when. */
export interface Lease {
  sessionId: string;
  workspace: string;
  pool: string;
  image: string;
  sandbox: SandboxRecord;
  /** The node serving the session (roles edge and node): every call is forwarded there. */
  node?: string;
  createdAt: number;
  lastActivityAt: number;
  idleTimeoutSeconds: number;
  maxLifetimeSeconds: number;
  /** Calls in flight: while there are any, the session does not idle out. */
  activeCalls?: number;
  /**
   * The latest deadline of the calls in flight: how long they can hold the session off
   * idling out even if their gateway dies without saying they ended.
   */
  busyUntil?: number;
  /** Set while the session is hibernated, or being saved or restored (docs/hibernate.md). */
  hibernation?: LeaseHibernation;
  /**
   * Its last hibernation refused at a bound (the workspace's, or the checkpoint store's bytes
   * or free disk) since it last hibernated: the session kept running, and the admin view
   * says why. Cleared as a later save is committed.
   */
  hibernationRefused?: HibernationRefusal;
  /**
   * The session's own narrowing of its workspace's egress, asked at CreateSession
   * (`sandpool.egress.hosts`, `sandpool.secrets`; src/egress/session-egress.ts). Absent: the
   * workspace's egress and all its secrets. Kept on the lease so every replica and node, and
   * a hibernated session resumed elsewhere, grant the same (src/egress/session-grant.ts).
   */
  egress?: LeaseEgress;
}

/** A session's egress narrowing; each list absent means "not narrowed". */
export interface LeaseEgress {
  /** Host patterns, each within the workspace's egressAllowHosts when it was asked. */
  hosts?: string[];
  /** Names of the workspace's secrets the session may have presented ([]: none). */
  secrets?: string[];
}

/** A hibernation refused at a bound: its answer's code and message, and when. */
export interface HibernationRefusal {
  code: string;
  message: string;
  /** Epoch ms. */
  at: number;
}

/**
 * Where a session stands in hibernation: `saving` (its sandbox being checkpointed),
 * `saved` (no sandbox; the checkpoint holds it) or `restoring` (a new sandbox on its way).
 * A session without `hibernation` is running.
 */
export type HibernationPhase = "saving" | "saved" | "restoring";

export interface LeaseHibernation {
  phase: HibernationPhase;
  /**
   * For `saving` and `restoring`: until when the replica doing it holds the session (epoch
   * ms). A claim past it was left by a replica that died midway and may be taken over.
   */
  claimUntil?: number;
  /** Who holds the claim: only its holder steps a held claim on. */
  claimId?: string;
  /** What the checkpoint keeps (set as the save begins; its bytes once it is committed). */
  checkpoint: CheckpointRecord;
}

/** What a session's record keeps of its checkpoint (src/hibernate/hibernate-sandbox.ts). */
export interface CheckpointRecord {
  kind: "memory" | "files";
  bytes: number;
  /** The sandbox id a memory checkpoint must come back under (its socket directory, its code uid). */
  sandboxId: string;
  /** The sandbox server's session: the same after a memory restore. */
  sandboxSessionId: string;
  pool: string;
  hibernatedAt: number;
  /**
   * The node whose checkpoint store holds it (roles edge and node): where a node-local
   * checkpoint resumes, and whom to ask to delete it. Absent on one host (`--role all`).
   */
  node?: string;
}

/**
 * One step of a session through hibernation (LeaseStore.stepHibernation), taken only when
 * the lease is in a phase of `from` ("running": no hibernation), its claim (if one is held)
 * is `claimId`'s, and, with `requireIdle`, no call is in flight. A claim past its
 * `claimUntil` may be taken over by anyone.
 */
export interface HibernationStep {
  now: number;
  from: ReadonlyArray<HibernationPhase | "running">;
  /** The claim the caller holds (from its earlier step), if any. */
  claimId?: string;
  /** The lease's hibernation after the step; undefined: running again. */
  to: LeaseHibernation | undefined;
  /** The session's new sandbox (a resume); the lease's `node` becomes the sandbox's. */
  sandbox?: SandboxRecord;
  requireIdle?: boolean;
  /**
   * The step is the session's activity (a resume: a call asked for it): its last activity
   * becomes `now` and its idle deadline moves with it. Without this a session hibernated for
   * most of its idle timeout would resume with its pre-hibernation activity and be reaped as
   * expired at once, its call lost.
   */
  activity?: boolean;
  /** A refused save returning the session to running: the lease keeps why (`hibernationRefused`). */
  refused?: HibernationRefusal;
}

export type HibernationStepped =
  | { outcome: "stepped"; lease: Lease }
  /** Not in `from` (`lease` as it is), busy, or gone. */
  | { outcome: "elsewhere"; lease: Lease }
  | { outcome: "busy" | "gone" };

/** Whether the session has a sandbox running for it now (not hibernated, nor being saved or restored). */
export function runsASandbox(lease: Lease): boolean {
  return lease.hibernation === undefined;
}

/** The phase a lease is in ("running" without hibernation). */
export function hibernationPhase(lease: Lease): HibernationPhase | "running" {
  return lease.hibernation?.phase ?? "running";
}

/** Whether a `saving` or `restoring` claim is still held at `now`. */
export function claimHeld(lease: Lease, now: number): boolean {
  const claimUntil = lease.hibernation?.claimUntil;
  return claimUntil !== undefined && claimUntil > now;
}

/**
 * Whether `step` may be taken on `lease` at `step.now` (the rule the stores apply
 * atomically; the Redis script hibernation-step-3.lua repeats it).
 */
export function hibernationStepRefusal(
  lease: Lease,
  step: HibernationStep,
): "busy" | "elsewhere" | undefined {
  if (!step.from.includes(hibernationPhase(lease))) return "elsewhere";
  if (claimHeld(lease, step.now) && lease.hibernation?.claimId !== step.claimId) return "elsewhere";
  if (step.requireIdle && (lease.activeCalls ?? 0) > 0 && (lease.busyUntil ?? 0) > step.now) return "busy";
  return undefined;
}

/** A call starting (with its deadline) or ending, recorded with the activity it is. */
export type CallMark = { begin: number } | { end: true };

/** Slots and memberships outlive the session's own deadline by this much, never less. */
export const HOLD_GRACE_MS = 60_000;

/** When the reaper should end the lease if nothing touches it first. */
export function leaseDeadline(lease: Lease): number {
  const idleDeadline = Math.max(lease.lastActivityAt + lease.idleTimeoutSeconds * 1000, lease.busyUntil ?? 0);
  return Math.min(idleDeadline, lease.createdAt + lease.maxLifetimeSeconds * 1000);
}

/**
 * Since when the session has been quiet: its last activity, or the deadline of its calls in
 * flight when that is later (they count as activity, as for the idle deadline). Automatic
 * hibernation waits on it (LeaseStore.quietLeases).
 */
export function quietSince(lease: Lease): number {
  return Math.max(lease.lastActivityAt, lease.busyUntil ?? 0);
}

/** Which quiet sessions to find (LeaseStore.quietLeases). */
export interface QuietQuery {
  /** No session quiet since later than this is wanted, whatever its workspace (epoch ms). */
  latest: number;
  /**
   * The latest quiet-since time wanted of `workspace`'s sessions (at most `latest`); null:
   * none of them. Asked only of workspaces that have a running session quiet since `latest`.
   */
  cutoff(workspace: string): Promise<number | null>;
  /** Leases returned per workspace at most (the oldest quiet first); the rest wait for a next query. */
  limit: number;
}

export interface LeaseKey {
  workspace: string;
  sessionId: string;
}

/** A call starting on a session (CoordinationStore.beginCall). */
export interface CallStart {
  now: number;
  /** The call's deadline (epoch ms): how long it may hold the session off idling out. */
  busyUntil: number;
  /** Execution time to reserve against the workspace's budget of `day` (Execute only). */
  budget?: { day: string; requestedMs: number; limitMs: number };
}

/**
 * What beginning a call found: the lease, marked busy, with the budget granted (0 without a
 * budget); or nothing changed because the session is gone (unknown, ended, another
 * workspace's), past its deadline (the caller ends it), or the budget is spent.
 */
export type CallStarted =
  | { outcome: "started"; lease: Lease; grantedMs: number }
  /** `hibernated`: the session has no sandbox now (hibernated, being saved or restored): resume it. */
  | { outcome: "gone" | "expired" | "budget_spent" | "hibernated" };

/** A call ending (CoordinationStore.endCall): its activity, and what goes back to the budget. */
export interface CallEnd {
  now: number;
  refund?: { day: string; milliseconds: number };
  /** The call's usage record (usage-backlog.ts), appended to the workspace's backlog with the end. */
  usage?: string;
}

/** A session's end record (usage-backlog.ts), appended as its lease is taken. */
export interface SessionEndUsage {
  /**
   * The record; as it is appended its `quantity` becomes `now` less the lease's `createdAt`
   * and its `sandboxId` the lease's sandbox.
   */
  record: string;
  now: number;
}

/** A new session's admission (CoordinationStore.admitSession): budget, slot and rate at once. */
export interface SessionAdmission {
  /** The slot's token: the session id. */
  token: string;
  slotLimit: number;
  slotExpiresAt: number;
  now: number;
  ratePerWindow: number;
  rateWindowMs: number;
  budgetDay: string;
  budgetLimitMs: number;
}

export type AdmissionVerdict =
  | { admitted: true }
  | { admitted: false; refused: "exec_budget" }
  | { admitted: false; refused: "concurrent_sessions" }
  | { admitted: false; refused: "session_rate"; waitMs: number };

/** Who holds a leased sandbox and until when (its session's slot expiry). */
export interface MemberHold {
  workspace: string;
  until: number;
  now: number;
  /**
   * By when the session's lease is recorded (epoch ms): till then the sandbox is marked in
   * flight, so a replica that dies handing it out leaves nothing held for an hour.
   */
  handOverBy?: number;
  /** Whether a sandbox parked for the workspace may be leased (`leaseIdle`); default true. */
  reuse?: boolean;
}

/** A reading of a session's sandbox CPU (AdmissionStore.chargeCpu). */
export interface CpuCharge {
  sessionId: string;
  /**
   * The sandbox's CPU time so far (ms), as its cgroup counts it: every process, since it
   * started. Undefined for a final reading that could not be taken (its session is forgotten).
   */
  cpuMs?: number;
  /** Its reading at lease time, for a session read for the first time; else its first reading is. */
  baseMs?: number;
  /** The UTC day charged (YYYY-MM-DD). */
  day: string;
  /** The session ended: charge this last reading and forget the session. */
  final?: boolean;
}

/** What `chargeCpu` charged, and the day's totals after it (ms). */
export interface CpuCharged {
  /** CPU charged by this reading: what the sandbox burned since the last one. */
  chargedMs: number;
  /** The day's CPU total of every sandbox of the workspace. */
  cpuDayMs: number;
  /** What the day has used: the larger of its calls' wall time and `cpuDayMs`. */
  usedMs: number;
}
