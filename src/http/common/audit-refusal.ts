/**
 * Hands a refused contract call to the audit (src/audit/record-refusal.ts) from the contract
 * app's error handler: only refusals after authentication (a principal is known) and only
 * the codes audit keeps. Never throws: auditing must not change the answer.
 */
import type { Context } from "hono";
import { isAuditedRefusal, recordRefusal } from "../../audit/record-refusal.js";
import { SandpoolError } from "../../contract/error-codes.js";
import type { GatewayEnv } from "../gateway-env.js";
import type { GatewayServices } from "../gateway-services.js";

const SESSION_IN_PATH = /\/sessions\/([^/]+)/;
/** What a session id can look like (the gateway mints 24 base64url characters). */
const SESSION_ID_SHAPE = /^[A-Za-z0-9_-]{1,64}$/;
/** The record's session for an id no session could have: kept out of the table as it came. */
const MISSHAPEN_ID = "(malformed)";

export function auditRefusal(services: GatewayServices, c: Context<GatewayEnv>, error: unknown): void {
  if (!(error instanceof SandpoolError) || !isAuditedRefusal(error.code)) return;
  const principal = c.get("principal");
  if (principal === undefined) return;
  try {
    // The id is whatever the client put in its path: only a plausible one is stored as it is.
    const sessionId = SESSION_IN_PATH.exec(c.req.path)?.[1];
    recordRefusal(services.usage, {
      principal,
      operation: c.get("operationId") ?? "unmatched",
      error,
      sessionId:
        sessionId === undefined ? undefined : SESSION_ID_SHAPE.test(sessionId) ? sessionId : MISSHAPEN_ID,
    });
  } catch (auditError) {
    c.get("log")?.warn({ err: auditError }, "could not audit a refused call");
  }
}
