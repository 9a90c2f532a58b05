/**
 * What each contract operation asks of the session layer, read by the pipeline's resolve,
 * policy and admit steps: whether it is gated by the workspace policy (a disabled workspace's
 * open sessions are refused too, not only its new ones) and by which further rules, and how
 * it touches its session: `call` begins a call (resolve, reserve the budget asked for and mark
 * the session busy, in one store round trip), `resolve` only reads the lease, `none` leaves it
 * to the handler (CreateSession leases one; DestroySession answers 204 for any id).
 */
import type { ExecRequest } from "../contract/schemas.js";
import type { CallArgs } from "../operations/handler.js";
import { fileSizeAllowed, toolAllowed } from "../policy/decide-access.js";
import { execTimeout } from "../policy/decide-limits.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import { enforce } from "../policy/verdict.js";
import type { CallOptions } from "./session-lifecycle.js";

export interface SessionPlanLimits {
  execDeadlineBufferMs: number;
  sandboxRequestTimeoutMs: number;
}

export interface SessionPlan {
  admits: "call" | "resolve" | "none";
  /** Whether the policy step loads the workspace's policy (and refuses a disabled workspace). */
  gated: boolean;
  /** The operation's own policy rules, after "the workspace is enabled". */
  rules?: (policy: EffectivePolicy, args: CallArgs) => void;
  /** The options of the call begun (`admits: "call"`). */
  callOptions?: (policy: EffectivePolicy, args: CallArgs, limits: SessionPlanLimits) => CallOptions;
}

/** Longest a transfer may keep its session from idling out if its end is never seen. */
export const TRANSFER_DEADLINE_MS = 30 * 60_000;

/** The seconds an Execute asks for: its own timeout or the default, within the ceiling in force. */
export function requestedExecSeconds(policy: EffectivePolicy, request: ExecRequest): number {
  return execTimeout(policy, request.timeout_seconds).value;
}

const transfer = (): CallOptions => ({ deadlineMs: TRANSFER_DEADLINE_MS });

export const sessionPlans: Readonly<Record<string, SessionPlan>> = {
  "sessions.create": { admits: "none", gated: false },
  "sessions.get": { admits: "resolve", gated: false },
  "sessions.delete": { admits: "none", gated: false },
  "sessions.exec": {
    admits: "call",
    gated: true,
    rules: (policy, args) => {
      enforce(toolAllowed(policy, (args.body as ExecRequest).tool));
    },
    // Busy until the longest the call may take (the time granted can only shorten it).
    callOptions: (policy, args, limits) => {
      const requestedMs = requestedExecSeconds(policy, args.body as ExecRequest) * 1000;
      return { deadlineMs: requestedMs + limits.execDeadlineBufferMs, budget: { policy, requestedMs } };
    },
  },
  "files.list": {
    admits: "call",
    gated: true,
    callOptions: (_policy, _args, limits) => ({ deadlineMs: limits.sandboxRequestTimeoutMs }),
  },
  "files.get": { admits: "call", gated: true, callOptions: transfer },
  "files.put": {
    admits: "call",
    gated: true,
    // Checked on Content-Length before anything is read; the sandbox enforces the cap exactly.
    rules: (policy, args) => {
      enforce(fileSizeAllowed(policy, args.stream?.contentLength));
    },
    callOptions: transfer,
  },
};
