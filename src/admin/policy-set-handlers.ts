/**
 * Policy as code: the whole set of workspace policies at once (src/policy/policy-set.ts,
 * `sandpool policy apply -f`). Reading it gives what is in force, as a set; applying one is a
 * single transaction: absent fields are no narrowing, a workspace left out loses its row, a
 * second identical apply changes nothing, and a refusal (422) lists every problem of every
 * entry and changes nothing. Each workspace changed is audited and announced to every replica.
 */
import type { OperationHandlers } from "../operations/handler.js";
import type { PolicyAdmin } from "../policy/policy-admin.js";
import type { WorkspacePolicyRow } from "../store/sql/policy-row.js";
import { actorOf, answer } from "./admin-call.js";

/** A row as a set entry: only what it narrows (the shape `policy apply -f` reads back). */
function entryOf(row: WorkspacePolicyRow): Record<string, unknown> {
  const { workspaceId: _w, version: _v, updatedAt: _u, updatedBy: _b, ...fields } = row;
  return Object.fromEntries(
    Object.entries(fields).filter(
      ([field, value]) => value !== null && !(field === "enabled" && value === true),
    ),
  );
}

export function policySetHandlers(policyAdmin: PolicyAdmin): OperationHandlers {
  return {
    "admin.policies.get": async () => {
      const rows = await policyAdmin.list();
      return answer({ policies: Object.fromEntries(rows.map((row) => [row.workspaceId, entryOf(row)])) });
    },

    "admin.policies.apply": async ({ args, caller, log }) => {
      const dryRun = args.query.dryRun === "true";
      const actor = actorOf(caller);
      const changes = await policyAdmin.apply(args.body, actor, dryRun);
      const changed = changes.filter((change) => change.action !== "unchanged");
      if (!dryRun && changed.length > 0)
        log.info(
          { actor, workspaces: changed.map((change) => `${change.action}:${change.workspace}`) },
          "policy set applied",
        );
      return answer({ dryRun, changed: changed.length > 0, changes });
    },
  };
}
