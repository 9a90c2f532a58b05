/**
 * A call's session as the pipeline admitted it (steps resolve, policy and admit): its key,
 * the workspace policy in force when the operation is gated, and, for an operation that
 * begins a call, the call begun (session resolved, busy, time reserved) or, for one that
 * only reads it, the lease.
 *
 * Part of what a handler sees (handler.ts), as the operation's session plan says
 * (session-plan.ts), so declared here with them; the session layer makes one
 * (src/session/session-calls.ts, `SessionLifecycle.beginCall`).
 */
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { Lease, LeaseKey } from "../store/coordination/records.js";

/** A call begun on a session (`SessionLifecycle.beginCall`). */
export interface OpenCall {
  lease: Lease;
  /** Execution time granted: what was asked, or what remained of the day; 0 without a budget. */
  grantedMs: number;
  /** The call resumed its hibernated session from files only: the interpreter started anew. */
  interpreterRestarted?: boolean;
  /**
   * Ends the call (once; later calls do nothing): records the activity, counts it out, and
   * settles the reservation with the wall time the gateway measured; `usage`, the call's
   * usage record, is written with the end, as durable as it. Never throws. Returns the
   * milliseconds charged.
   */
  end(measuredMs?: number, usage?: CallUsage): Promise<number>;
  /**
   * The same end in two steps: made now (settled, and its usage record journaled, durable
   * from here: src/metering/usage-journal.ts), sent to the store when the returned function
   * runs. What a handler calls before it releases its answer, to send the end after it.
   */
  ending(measuredMs?: number, usage?: CallUsage): () => Promise<number>;
}

/** What a call used, recorded with its end: an Execute its time charged, a transfer its bytes. */
export interface CallUsage {
  kind: "exec" | "file_in" | "file_out";
  tool?: string;
  /** Bytes for a transfer; absent for an Execute: the milliseconds charged. */
  quantity?: number;
}

export interface ResolvedSession {
  key: LeaseKey;
  policy: EffectivePolicy | undefined;
  /** The call begun: the handler must end it (`OpenCall.end`), once, whatever happens. */
  call: OpenCall | undefined;
  lease: Lease | undefined;
}
