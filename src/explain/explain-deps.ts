/**
 * What explain reads: the policy, the admission and pool previews, the leases (read only), and
 * the gateway's authenticator for a token to check.
 */

import type { Admission } from "../admission/admission.js";
import type { BearerAuthenticator } from "../auth/principal.js";
import type { PolicyService } from "../policy/policy-service.js";
import type { PoolManager } from "../pool/pool-manager.js";
import type { SessionLifecycle } from "../session/session-lifecycle.js";

export interface ExplainDeps {
  policies: Pick<PolicyService, "forWorkspace">;
  admission: Pick<Admission, "previewSession" | "previewExec">;
  pools: Pick<PoolManager, "list" | "capacity">;
  sessions: Pick<SessionLifecycle, "find">;
  authenticator: BearerAuthenticator;
}
