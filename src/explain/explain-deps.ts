/** What explain reads: the policy, the admission and pool previews, and the leases (read only). */

import type { Admission } from "../admission/admission.js";
import type { PolicyService } from "../policy/policy-service.js";
import type { PoolManager } from "../pool/pool-manager.js";
import type { SecretBinding } from "../secrets/workspace-secrets.js";
import type { SessionLifecycle } from "../session/session-lifecycle.js";

export interface ExplainDeps {
  policies: Pick<PolicyService, "forWorkspace">;
  admission: Pick<Admission, "previewSession" | "previewExec">;
  pools: Pick<PoolManager, "list" | "capacity">;
  sessions: Pick<SessionLifecycle, "find">;
  /** A workspace's secrets, names and bindings only (never values); absent: it holds none. */
  secretBindings?: (workspace: string) => Promise<Array<{ name: string; binding: SecretBinding }>>;
  /** The deployment's egress proxy settings explain reports (the ports it allows). */
  egressSettings?: { allowPorts?: readonly number[] };
}
