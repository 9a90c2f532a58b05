/**
 * Pipeline step "mounted": is the operation mounted for this caller? Contract operations are
 * mounted for workspace tokens; a token naming no workspace (an admin token) is refused 401,
 * failing closed, since nothing downstream could scope its calls, and told that admin tokens
 * are for the admin API. Admin operations are mounted
 * for admin tokens; any other valid token is refused 403 `auth.forbidden`. Operations for
 * anyone need no credential. Both refusals are counted with the failed authentications, by
 * reason (they are not failed attempts: the token was valid, just not for this operation).
 */
import { AuthRefusal } from "../../auth/auth-refusal.js";
import type { Caller } from "../../auth/principal.js";
import { countAuthFailure } from "../../auth/verify-bearer.js";
import { SandpoolError } from "../../contract/error-codes.js";
import type { GatewayMetrics } from "../../metering/gateway-metrics.js";
import type { Audience } from "../../operations/operation.js";

export function mountedCaller(
  audience: Audience,
  caller: Caller | undefined,
  metrics: Pick<GatewayMetrics, "authFailures">,
): Caller | undefined {
  if (audience === "anyone") return caller;
  if (caller === undefined) throw new AuthRefusal("missing", "no credential");
  if (audience === "workspace" && caller.workspace === undefined) {
    const refusal = new AuthRefusal(
      "no_workspace",
      "the token names no workspace (an admin token): contract routes need one",
      "this token names no workspace: an admin token is for the admin API (/admin/v1); " +
        "contract routes need a token for one workspace",
    );
    countAuthFailure(metrics, refusal);
    throw refusal;
  }
  if (audience === "admin" && caller.admin !== true) {
    const refusal = new SandpoolError("auth.forbidden", "the admin API needs an admin token");
    countAuthFailure(metrics, refusal);
    throw refusal;
  }
  return caller;
}
