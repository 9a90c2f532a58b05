/**
 * Explain's "would this token be allowed": the bearer token an operator pastes is verified by
 * the gateway's own authenticator (the one every call goes through), and the trace says
 * whether it is valid, why not (expired, bad signature, unknown key...), and whose workspace
 * it speaks for. The rest of the explanation is evaluated for that workspace, since that is
 * where the token's calls go; a token of another workspace than the one asked about is said
 * so. The token is never echoed: the trace names the reason from a fixed set, never the
 * credential or the verifier's own message (an API key's refusal could name its prefix).
 * Verified outside the failed-attempt limits and the refusal metrics: an operator's question
 * is not a client's attempt, and only admins can ask it.
 */
import type { AuthFailureReason } from "../auth/auth-refusal.js";
import { authFailureReason } from "../auth/auth-refusal.js";
import type { BearerAuthenticator } from "../auth/principal.js";
import { SandpoolError } from "../contract/error-codes.js";
import type { TokenVerdict, Trace } from "./explain-trace.js";

const REASONS: Partial<Record<AuthFailureReason, string>> = {
  missing: "it is empty",
  malformed: "it is not a well-formed JWT or sandpool API key",
  expired: "it has expired",
  bad_signature: "its signature does not verify with the gateway's keys",
  bad_algorithm: "it is signed with an algorithm the gateway does not accept",
  bad_claims: "a checked claim is wrong (issuer, audience, maximum age...)",
  unknown_signing_key: "it names a signing key the gateway's key set does not have",
  unknown_key: "no such API key (or the wrong secret for its prefix)",
  revoked_key: "the API key was revoked",
  expired_key: "the API key has expired",
  introspection_refused: "the introspection endpoint says it is not active",
  unrecognised: "it is neither a JWT nor a sandpool API key, and no introspection endpoint is configured",
  introspection_unavailable: "the introspection endpoint did not answer (nothing is known of the token)",
};

/**
 * Adds the `token` step and answers the workspace the rest is evaluated for: the token's when
 * it is valid and names one, else the one asked about.
 */
export async function tokenStep(
  authenticator: BearerAuthenticator,
  trace: Trace,
  token: string,
  asked: string,
): Promise<{ workspace: string; verdict: TokenVerdict }> {
  let caller: Awaited<ReturnType<BearerAuthenticator["authenticate"]>>;
  try {
    caller = await authenticator.authenticate(`Bearer ${token}`);
  } catch (error) {
    if (!(error instanceof SandpoolError)) throw error;
    const reason = authFailureReason(error);
    trace.deny("token", error.code, {
      rule: "auth.bearer",
      value: reason,
      detail: `the token is refused: ${REASONS[reason] ?? reason}; the rest is evaluated for '${asked}', as asked`,
    });
    return { workspace: asked, verdict: refused(reason) };
  }
  const expires = new Date(caller.expiresAt * 1000).toISOString();
  if (caller.workspace === undefined) {
    trace.deny("token", "auth.invalid", {
      rule: "auth.workspace",
      value: "no_workspace",
      detail: `a valid ${caller.admin ? "admin " : ""}token that names no workspace: contract calls refuse it (admin tokens go to /admin/v1); the rest is evaluated for '${asked}', as asked`,
    });
    return { workspace: asked, verdict: { ...refused("no_workspace"), admin: caller.admin === true } };
  }
  const other = caller.workspace !== asked;
  trace.pass("token", {
    rule: "auth.bearer",
    value: caller.workspace,
    detail:
      `a valid token of workspace '${caller.workspace}', accepted until ${expires}` +
      (other
        ? `; it is not a token of '${asked}', the workspace asked about: its calls go to '${caller.workspace}', so the rest is evaluated for '${caller.workspace}'`
        : ""),
  });
  return {
    workspace: caller.workspace,
    verdict: {
      valid: true,
      reason: null,
      workspace: caller.workspace,
      admin: caller.admin === true,
      expires,
    },
  };
}

function refused(reason: AuthFailureReason): TokenVerdict {
  return { valid: false, reason, workspace: null, admin: false, expires: null };
}
