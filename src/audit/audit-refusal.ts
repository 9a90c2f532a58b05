/**
 * The audit of refused contract calls (record-refusal.ts): a call refused after
 * authentication (a principal is known) with a code audit keeps leaves a durable record.
 * Never throws: auditing must not change the answer. Each refusal is audited once, where it
 * is made: by the pipeline for its steps and handlers (src/pipeline/pipeline.ts), by the
 * transport for the one refusal it makes after authentication, calls in flight
 * (src/http/name-contract-operations.ts).
 */
import type { Logger } from "pino";
import type { Principal } from "../auth/principal.js";
import { SandpoolError } from "../contract/error-codes.js";
import type { UsageSink } from "../metering/usage-sink.js";
import { isAuditedRefusal, recordRefusal } from "./record-refusal.js";

/** What a session id can look like (the gateway mints 24 base64url characters). */
const SESSION_ID_SHAPE = /^[A-Za-z0-9_-]{1,64}$/;
/** The record's session for an id no session could have: kept out of the table as it came. */
const MISSHAPEN_ID = "(malformed)";

const SESSION_IN_PATH = /\/sessions\/([^/]+)/;

/** The session id a request path names (`/sessions/{id}/...`), for a refusal before the route ran. */
export function sessionIdInPath(path: string): string | undefined {
  return SESSION_IN_PATH.exec(path)?.[1];
}

export interface RefusedCall {
  principal: Principal | undefined;
  /** The contract operation's id; `unmatched` when the call matched none. */
  operationId: string;
  /** The session id as the client wrote it, if the call named one. */
  sessionId: string | undefined;
}

export function auditRefusal(usage: UsageSink, log: Logger, call: RefusedCall, error: unknown): void {
  if (!(error instanceof SandpoolError) || !isAuditedRefusal(error.code)) return;
  if (call.principal === undefined) return;
  try {
    // The id is whatever the client put in its path: only a plausible one is stored as it is.
    const { sessionId } = call;
    recordRefusal(usage, {
      principal: call.principal,
      operation: call.operationId,
      error,
      sessionId:
        sessionId === undefined ? undefined : SESSION_ID_SHAPE.test(sessionId) ? sessionId : MISSHAPEN_ID,
    });
  } catch (auditError) {
    log.warn({ err: auditError }, "could not audit a refused call");
  }
}
