/**
 * Pipeline step 10 (audit) for refused contract calls: a call that passed authentication and
 * was then refused by policy, a quota, capacity, an upload over the file cap, or because its
 * session is unknown leaves a durable record (a usage event of kind `denied`), read back by
 * `GET /admin/v1/audit?kind=denied`.
 * It goes through the usage buffer, so it costs the request nothing but a push, and reaches
 * Postgres within a second or two. Refusals of one workspace, operation and code within a
 * second are one record with their count, whatever session ids the client named
 * (src/metering/refusal-buffer.ts), so a client hammering a quota or naming random sessions
 * writes a row a second, not a row a call.
 */
import type { Principal } from "../auth/principal.js";
import type { ErrorCode, SandpoolError } from "../contract/error-codes.js";
import { NO_SESSION, type UsageSink } from "../metering/usage-sink.js";

/**
 * The codes a refusal is audited for: what the workspace was not allowed to do (an upload over
 * its `maxFileBytes` among them).
 */
const AUDITED_PREFIXES = ["policy.", "quota.", "capacity."] as const;
const AUDITED_CODES = new Set<ErrorCode>(["session.not_found", "file.too_large"]);

export function isAuditedRefusal(code: ErrorCode): boolean {
  return AUDITED_CODES.has(code) || AUDITED_PREFIXES.some((prefix) => code.startsWith(prefix));
}

export interface Refusal {
  principal: Principal;
  /** The contract operation's id (`sessions.exec`); `unmatched` when the call matched none. */
  operation: string;
  error: SandpoolError;
  /** The session the call named, if any. */
  sessionId: string | undefined;
}

export function recordRefusal(usage: UsageSink, refusal: Refusal): void {
  const { principal, operation, error } = refusal;
  usage.record({
    workspace: principal.workspace,
    sessionId: refusal.sessionId ?? NO_SESSION,
    kind: "denied",
    detail: {
      operation,
      code: error.code,
      status: error.status,
      // Who, as audit names a credential: its subject or id, never the credential itself.
      principal: principal.subject ?? principal.tokenId ?? null,
    },
  });
}
