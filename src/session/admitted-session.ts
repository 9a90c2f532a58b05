/**
 * A call's session as the pipeline admitted it (steps resolve, policy and admit): its key,
 * the workspace policy in force when the operation is gated, and, for an operation that
 * begins a call, the call begun (session resolved, busy, time reserved) or, for one that
 * only reads it, the lease.
 */
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { Lease, LeaseKey } from "../store/coordination/records.js";
import type { OpenCall } from "./session-lifecycle.js";

export interface AdmittedSession {
  key: LeaseKey;
  policy: EffectivePolicy | undefined;
  /** The call begun: the handler must end it (`OpenCall.end`), once, whatever happens. */
  call: OpenCall | undefined;
  lease: Lease | undefined;
}
