/**
 * What a contract operation asks of the session layer, declared with the operation itself
 * (contract-operations.ts) and read by the pipeline (src/session/session-calls.ts) and by
 * explain (src/explain/explain-session-call.ts), so both walk the same rules: whether it is
 * gated by the workspace policy (a disabled workspace's open sessions are refused too, not
 * only its new ones) and by which further rules, and how it touches its session: `call`
 * begins a call (resolve, reserve the budget asked for and mark the session busy, in one
 * store round trip), `resolve` only reads the lease, `none` leaves it to the handler
 * (CreateSession leases one; DestroySession answers 204 for any id).
 */
import type { ExecRequest } from "../contract/schemas.js";
import { type Clamp, execTimeout } from "../policy/decide-limits.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { PolicyVerdict } from "../policy/verdict.js";

/** What a rule reads of a call: its admitted body, and an upload's declared length. */
export interface RuleArgs {
  body?: unknown;
  stream?: { contentLength?: number };
}

/**
 * One of an operation's own policy rules, after "the workspace is enabled". `Args` is what
 * its operation admits (its body's type): the pipeline and explain call a rule only with the
 * admitted arguments of its own operation (explain skips a rule that `readsBody` when the body
 * was refused), which a method's parameter lets a plan hold beside other operations' rules.
 */
export interface PolicyRule<Args extends RuleArgs = RuleArgs> {
  /** The verdict for a call: the pipeline enforces it, explain reports it. */
  decide(policy: EffectivePolicy, args: Args): PolicyVerdict;
  /** For a rule that reads the body: its name, and why explain skips it when the body is not valid. */
  readsBody?: { rule: string; skipped: string };
}

export interface SessionPlanLimits {
  execDeadlineBufferMs: number;
  sandboxRequestTimeoutMs: number;
}

export interface SessionPlan {
  admits: "call" | "resolve" | "none";
  /** Whether the policy step loads the workspace's policy (and refuses a disabled workspace). */
  gated: boolean;
  /** Why a disabled workspace may still make this call (explain says so), for one not gated. */
  ungated?: string;
  rules?: readonly PolicyRule[];
  /** The execution time the call reserves against the day's budget: the time asked, clamped (a method, as `decide`). */
  reserves?(policy: EffectivePolicy, args: RuleArgs): Clamp;
  /** How long a call begun (`admits: "call"`) keeps its session busy, given the time it reserves. */
  busyMs?: (limits: SessionPlanLimits, reservedMs: number | undefined) => number;
}

/** Longest a transfer may keep its session from idling out if its end is never seen. */
export const TRANSFER_DEADLINE_MS = 30 * 60_000;

/** An Execute's timeout: its own or the default, within the ceiling in force. */
export function execReserve(policy: EffectivePolicy, args: { body?: ExecRequest }): Clamp {
  return execTimeout(policy, args.body?.timeout_seconds);
}

/** The seconds an Execute asks for: its own timeout or the default, within the ceiling in force. */
export function requestedExecSeconds(policy: EffectivePolicy, request: ExecRequest): number {
  return execReserve(policy, { body: request }).value;
}
