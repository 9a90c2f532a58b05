/** What every admin handler shares: who the audit trail names, and the outcomes it answers with. */
import type { Caller } from "../auth/principal.js";
import type { Outcome } from "../operations/handler.js";

/** Who the audit trail names for an operator's change: the token's subject, else "admin". */
export function actorOf(caller: Caller): string {
  return caller.subject && caller.subject.length > 0 ? caller.subject : "admin";
}

/** A JSON answer (200 unless said). */
export function answer<Body>(body: Body, status = 200): { kind: "json"; status: number; body: Body } {
  return { kind: "json", status, body };
}

/** 204, nothing in the body. */
export function noContent(): Outcome {
  return { kind: "empty", status: 204 };
}
