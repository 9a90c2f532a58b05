/**
 * What explain reads: the policy, the admission and pool previews, the leases (read only), and
 * the gateway's authenticator for a token to check.
 */

import type { Admission } from "../admission/admission.js";
import type { BearerAuthenticator } from "../auth/principal.js";
import type { PolicyService } from "../policy/policy-service.js";
import type { PoolManager } from "../pool/pool-manager.js";
import type { SecretBinding } from "../secrets/workspace-secrets.js";
import type { SessionLifecycle } from "../session/session-lifecycle.js";

export interface ExplainDeps {
  policies: Pick<PolicyService, "forWorkspace">;
  admission: Pick<Admission, "previewSession" | "previewExec">;
  pools: Pick<PoolManager, "list" | "capacity">;
  sessions: Pick<SessionLifecycle, "find">;
  authenticator: BearerAuthenticator;
  /** A workspace's secrets, names and bindings only (never values); absent: it holds none. */
  secretBindings?: (workspace: string) => Promise<Array<{ name: string; binding: SecretBinding }>>;
  /** The deployment's egress proxy settings explain reports (the ports it allows). */
  egressSettings?: { allowPorts?: readonly number[] };
}
