/**
 * Pipeline step "resolve": the session a contract call names (unknown, ended and other
 * workspaces' sessions are the same 404). On the hot path it costs nothing here: the admit
 * step resolves the session, reserves the budget and marks it busy in one store round trip
 * (`SessionLifecycle.beginCall`). But the session's 404 comes before anything else, so a
 * refusal found before that round trip (a malformed body, a tool not allowed, a disabled
 * workspace) resolves the session first: the caller gets the 404 when there is no session.
 */
import type { SessionCalls } from "../../session/session-calls.js";
import type { LeaseKey } from "../../store/coordination/records.js";

/** Throws `refusal` of a step before admission, or the 404 of the session `key` names when it has none. */
export async function refuseAfterResolving(
  sessions: SessionCalls | undefined,
  key: LeaseKey | undefined,
  refusal: unknown,
): Promise<never> {
  if (sessions === undefined || key === undefined) throw refusal;
  return sessions.refuseInOrder(key, refusal);
}
