/**
 * Workspace policy (docs/architecture.md, "Policy"): operators list the workspaces with a row,
 * read a workspace's policy and its audit trail, and edit or remove its row. Edits go through
 * PolicyAdmin: validated against the deployment (a row may only narrow; 422 lists every
 * problem), audited, and announced to every replica, so the next request anywhere sees them.
 */

import { adminOperations } from "../operations/admin-operations.js";
import { DEFAULT_AUDIT_LIMIT } from "../operations/admin-schemas/policy-schemas.js";
import type { OperationHandlers } from "../operations/handler.js";
import { handlersFor } from "../operations/typed-handlers.js";
import type { PolicyAdmin } from "../policy/policy-admin.js";
import type { PolicyService } from "../policy/policy-service.js";
import { actorOf, answer, noContent } from "./admin-call.js";
import { policyView } from "./policy-view.js";

export interface WorkspaceDeps {
  /** The deployment's policy: the ceilings a row narrows. */
  policies: Pick<PolicyService, "deployment">;
  policyAdmin: PolicyAdmin;
}

export function workspaceHandlers({ policies, policyAdmin }: WorkspaceDeps): OperationHandlers {
  const view = (workspace: string) => policyView(policies.deployment, policyAdmin, workspace);
  return handlersFor(adminOperations, {
    "admin.workspaces.list": async () => answer({ workspaces: await policyAdmin.list() }),

    "admin.policy.get": async ({ args }) => answer(await view(args.params.ws)),

    "admin.policy.put": async ({ args, caller, log }) => {
      const workspace = args.params.ws;
      const actor = actorOf(caller);
      await policyAdmin.put(workspace, args.body, actor);
      log.info({ workspace, actor }, "workspace policy edited");
      return answer(await view(workspace));
    },

    "admin.policy.delete": async ({ args, caller, log }) => {
      const workspace = args.params.ws;
      const actor = actorOf(caller);
      if (await policyAdmin.delete(workspace, actor))
        log.info({ workspace, actor }, "workspace policy deleted");
      return noContent();
    },

    "admin.policy.audit": async ({ args }) => {
      const workspace = args.params.ws;
      const limit = args.query.limit ? Number(args.query.limit) : DEFAULT_AUDIT_LIMIT;
      return answer({ workspace, entries: await policyAdmin.audit(workspace, limit) });
    },
  });
}
