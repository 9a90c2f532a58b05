/** What explain reads: the policy, the admission and pool previews, and the leases (read only). */

import type { Admission } from "../admission/admission.js";
import type { PolicyService } from "../policy/policy-service.js";
import type { PoolManager } from "../pool/pool-manager.js";
import type { SessionLifecycle } from "../session/session-lifecycle.js";

export interface ExplainDeps {
  policies: Pick<PolicyService, "forWorkspace">;
  admission: Pick<Admission, "previewSession" | "previewExec">;
  pools: Pick<PoolManager, "list" | "capacity">;
  sessions: Pick<SessionLifecycle, "find">;
}
