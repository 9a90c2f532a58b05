/**
 * The limits a call runs under: what it asked for, else the workspace's default, never above
 * the ceiling in force. Clamped, never refused (the contract's hints are hints). Pure.
 */
import type { EffectivePolicy } from "./effective-policy.js";

export interface Clamp {
  /** `session.idle_timeout`, `session.max_lifetime`, `exec.timeout`. */
  rule: string;
  /** The ceiling's policy field. */
  field: keyof EffectivePolicy;
  /** The value in force for the call. */
  value: number;
  /** The ceiling. */
  limit: number;
  /** What the call asked for; null when it asked nothing (the default applies). */
  asked: number | null;
  /** True when the ceiling cut what was asked (or the default) down. */
  clamped: boolean;
}

function clamp(
  rule: string,
  field: keyof EffectivePolicy,
  asked: number | null | undefined,
  fallback: number,
  ceiling: number,
): Clamp {
  const wanted = asked ?? fallback;
  return {
    rule,
    field,
    value: Math.min(wanted, ceiling),
    limit: ceiling,
    asked: asked ?? null,
    clamped: wanted > ceiling,
  };
}

export interface SessionHints {
  idle_timeout_seconds?: number | null;
  max_lifetime_seconds?: number | null;
}

/** A new session's idle timeout and maximum lifetime, in seconds. */
export function sessionTimeouts(
  policy: EffectivePolicy,
  hints: SessionHints,
): { idle: Clamp; lifetime: Clamp } {
  return {
    idle: clamp(
      "session.idle_timeout",
      "idleTimeoutCeilingSeconds",
      hints.idle_timeout_seconds,
      policy.defaultIdleTimeoutSeconds,
      policy.idleTimeoutCeilingSeconds,
    ),
    lifetime: clamp(
      "session.max_lifetime",
      "maxLifetimeCeilingSeconds",
      hints.max_lifetime_seconds,
      policy.defaultMaxLifetimeSeconds,
      policy.maxLifetimeCeilingSeconds,
    ),
  };
}

/** An Execute's `timeout_seconds`, before the day's budget may cut it further. */
export function execTimeout(policy: EffectivePolicy, requested: number | null | undefined): Clamp {
  return clamp(
    "exec.timeout",
    "execTimeoutCeilingSeconds",
    requested,
    policy.defaultExecTimeoutSeconds,
    policy.execTimeoutCeilingSeconds,
  );
}

/**
 * The timeout a call is forwarded with once `grantedMs` of the day's budget was granted:
 * whole seconds, rounded down so the call cannot outrun the grant (below one second granted,
 * one second: the last call of a day may overrun that little).
 */
export function grantedTimeoutSeconds(requestedSeconds: number, grantedMs: number): number {
  return Math.max(1, Math.min(requestedSeconds, Math.floor(grantedMs / 1000)));
}
