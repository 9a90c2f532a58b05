/**
 * The decision trace explain answers with: a step per check, in the order the real call
 * makes them, each with its verdict and what decided it; the decision and its code are the
 * first refusal's, which is what the real call answers (it stops there; explain goes on, so
 * an operator sees every check that would refuse).
 */

import type { AuthFailureReason } from "../auth/auth-refusal.js";
import type { ErrorCode } from "../contract/error-codes.js";

export type StepName = "token" | "mounted" | "args" | "resolve" | "policy" | "admit";

export interface TraceStep {
  step: StepName;
  verdict: "pass" | "deny" | "skip";
  rule?: string;
  /** The policy field that decided (camelCase, as the admin API names it). */
  field?: string;
  value?: unknown;
  limit?: unknown;
  detail?: string;
  /** The error code a refused step answers with. */
  code?: ErrorCode;
}

/** What the answer says of a token explain was given (src/explain/explain-token.ts), never the token. */
export interface TokenVerdict {
  valid: boolean;
  /** Why it is refused: a `sandpool_auth_failures_total` reason; null when valid. */
  reason: AuthFailureReason | null;
  /** The workspace it speaks for; null when refused or naming none. */
  workspace: string | null;
  admin: boolean;
  /** When it stops being accepted (ISO 8601); null when refused. */
  expires: string | null;
}

export interface ExplainAnswer {
  workspace: string;
  operation: string;
  decision: "allow" | "deny";
  /** The error code the real call would get, or null when it would be allowed. */
  code: ErrorCode | null;
  steps: TraceStep[];
  /** The limits in force for the call: the workspace's policy, and what this call would run under. */
  effective: Record<string, unknown>;
  /** What the token the request carried is, when it carried one (never the token). */
  token?: TokenVerdict;
  /** With `egressHost`: whether a session could reach it, and which secrets would be attached (explain-egress.ts). */
  egress?: {
    destination: string;
    decision: "allow" | "deny";
    steps: TraceStep[];
    secrets: string[];
  };
}

export class Trace {
  readonly steps: TraceStep[] = [];

  add(step: TraceStep): this {
    this.steps.push(step);
    return this;
  }

  pass(step: StepName, fields: Omit<TraceStep, "step" | "verdict"> = {}): this {
    return this.add({ step, verdict: "pass", ...fields });
  }

  deny(step: StepName, code: ErrorCode, fields: Omit<TraceStep, "step" | "verdict" | "code"> = {}): this {
    return this.add({ step, verdict: "deny", code, ...fields });
  }

  skip(step: StepName, rule: string, detail: string): this {
    return this.add({ step, verdict: "skip", rule, detail });
  }

  /** The first refusal's code: what the real call answers. */
  code(): ErrorCode | null {
    return this.steps.find((step) => step.verdict === "deny")?.code ?? null;
  }
}
