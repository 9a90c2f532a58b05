/**
 * What a policy decision answers: allowed or not, and why, in terms an operator can act on:
 * the rule that decided, the policy field it read and that field's value in force. The
 * gateway's checks enforce a verdict (`enforce`); explain (src/explain/) reports the same
 * verdict, so the two cannot drift apart.
 */
import { type ErrorCode, SandpoolError } from "../contract/error-codes.js";
import type { EffectivePolicy } from "./effective-policy.js";

export interface PolicyVerdict {
  allowed: boolean;
  /** The rule that decided: `workspace.enabled`, `image.allowed`, `tool.allowed`, `file.size`. */
  rule: string;
  /** The policy field the rule read (camelCase, as the admin API names it). */
  field: keyof EffectivePolicy;
  /** That field's value in force. */
  value: unknown;
  /** What the call asked for (the image, the tool, the size), when it asked anything. */
  asked?: unknown;
  /** The answer a refused call gets. */
  refusal?: { code: ErrorCode; message: string };
}

export function allow(rule: string, field: keyof EffectivePolicy, value: unknown, asked?: unknown) {
  return { allowed: true, rule, field, value, ...(asked === undefined ? {} : { asked }) } as const;
}

export function deny(
  rule: string,
  field: keyof EffectivePolicy,
  value: unknown,
  refusal: { code: ErrorCode; message: string },
  asked?: unknown,
) {
  return { allowed: false, rule, field, value, refusal, ...(asked === undefined ? {} : { asked }) } as const;
}

/** The error a refusing verdict answers with. */
export function refusalOf(verdict: PolicyVerdict): SandpoolError {
  const refusal = verdict.refusal ?? {
    code: "server.internal",
    message: `${verdict.rule} refused without a reason`,
  };
  return new SandpoolError(refusal.code, refusal.message);
}

/** Throws the refusal of a verdict that does not allow the call. */
export function enforce<V extends PolicyVerdict>(verdict: V): V {
  if (!verdict.allowed) throw refusalOf(verdict);
  return verdict;
}
