/**
 * Workspace API keys in the admin API. A key is shown once, when created; listings never
 * carry its secret nor its hash. Creation and revocation are audited (api_key_audit) and
 * announced to every replica, whose key cache drops the key at once. Revoking twice is fine;
 * an unknown prefix is 404 `request.not_found`.
 */
import type { ApiKeyAdmin } from "../auth/api-key-admin.js";
import { adminOperations } from "../operations/admin-operations.js";
import { given } from "../operations/admin-schemas/admin-params.js";
import type { OperationHandlers } from "../operations/handler.js";
import { handlersFor } from "../operations/typed-handlers.js";
import { actorOf, answer } from "./admin-call.js";

export function keyHandlers(keys: Pick<ApiKeyAdmin, "create" | "list" | "revoke">): OperationHandlers {
  return handlersFor(adminOperations, {
    "admin.keys.create": async ({ args, caller, log }) => {
      const actor = actorOf(caller);
      const created = await keys.create(args.body, actor);
      log.info({ workspace: created.workspace, prefix: created.prefix, actor }, "API key created");
      return answer(created, 201);
    },

    "admin.keys.list": async ({ args }) => answer({ items: await keys.list(given(args.query.workspace)) }),

    "admin.keys.revoke": async ({ args, caller, log }) => {
      const actor = actorOf(caller);
      const revoked = await keys.revoke(args.params.prefix, actor);
      log.info({ workspace: revoked.workspace, prefix: revoked.prefix, actor }, "API key revoked");
      return answer({ revoked });
    },
  });
}
