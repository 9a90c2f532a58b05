/**
 * Policy as code: the whole set of workspace policies at once (src/policy/policy-set.ts,
 * `sandpool policy apply -f`). Reading it gives what is in force, as a set; applying one is a
 * single transaction: absent fields are no narrowing, a workspace left out loses its row, a
 * second identical apply changes nothing, and a refusal (422) lists every problem of every
 * entry and changes nothing. Each workspace changed is audited and announced to every replica.
 */
import { malformed, SandpoolError } from "../contract/error-codes.js";
import { adminOperations } from "../operations/admin-operations.js";
import type { OperationHandlers } from "../operations/handler.js";
import { handlersFor } from "../operations/typed-handlers.js";
import type { PolicyAdmin } from "../policy/policy-admin.js";
import type { PolicyService } from "../policy/policy-service.js";
import type { SecretStore } from "../secrets/secret-store.js";
import type { WorkspacePolicyRow } from "../store/sql/policy-row.js";
import { actorOf, answer } from "./admin-call.js";
import { canonicalJson, type FileSecret, splitPolicyFile } from "./policy-file-secrets.js";

export interface PolicySetDeps {
  policyAdmin: PolicyAdmin;
  /** Rebinds the secrets a file names (their values stay as stored). */
  secretStore: Pick<SecretStore, "existing" | "list" | "rebind">;
  policies: Pick<PolicyService, "deployment">;
}

/** A row as a set entry: only what it narrows (the shape `policy apply -f` reads back). */
function entryOf(row: WorkspacePolicyRow): Record<string, unknown> {
  const { workspaceId: _w, version: _v, updatedAt: _u, updatedBy: _b, ...fields } = row;
  return Object.fromEntries(
    Object.entries(fields).filter(
      ([field, value]) => value !== null && !(field === "enabled" && value === true),
    ),
  );
}

export function policySetHandlers({ policyAdmin, secretStore, policies }: PolicySetDeps): OperationHandlers {
  return handlersFor(adminOperations, {
    "admin.policies.get": async () => {
      const rows = await policyAdmin.list();
      return answer({ policies: Object.fromEntries(rows.map((row) => [row.workspaceId, entryOf(row)])) });
    },

    "admin.policies.apply": async ({ args, caller, log }) => {
      const dryRun = args.query.dryRun === "true";
      const actor = actorOf(caller);
      const file = await splitPolicyFile(args.body, secretStore, policies.deployment.egressAllowHosts);
      // A refused secret refuses the whole file: every problem listed, the policies' too, nothing applied.
      if (file.problems.length > 0)
        throw malformed([...(await policyProblems(policyAdmin, file.policyInput, actor)), ...file.problems]);
      const changes = await policyAdmin.apply(file.policyInput, actor, dryRun);
      const secrets = await rebindSecrets(secretStore, file.secrets, actor, dryRun);
      const changed = changes.filter((change) => change.action !== "unchanged");
      const rebound = secrets.filter((secret) => secret.action === "rebind");
      if (!dryRun && changed.length + rebound.length > 0)
        log.info(
          {
            actor,
            workspaces: changed.map((change) => `${change.action}:${change.workspace}`),
            secrets: rebound.map((secret) => `${secret.workspace}/${secret.name}`),
          },
          "policy set applied",
        );
      return answer({
        dryRun,
        changed: changed.length + rebound.length > 0,
        changes,
        ...(secrets.length > 0 ? { secrets } : {}),
      });
    },
  });
}

/** The policy set's own problems, judged without applying anything (none: an empty list). */
async function policyProblems(policyAdmin: PolicyAdmin, input: unknown, actor: string): Promise<string[]> {
  try {
    await policyAdmin.apply(input, actor, true);
    return [];
  } catch (error) {
    if (error instanceof SandpoolError && error.code === "request.malformed")
      return [...(error.problems ?? [])];
    throw error;
  }
}

/** Replaces the bindings a file gives that differ from the stored ones (none on a dry run). */
async function rebindSecrets(
  secretStore: PolicySetDeps["secretStore"],
  secrets: readonly FileSecret[],
  actor: string,
  dryRun: boolean,
): Promise<{ workspace: string; name: string; action: "rebind" | "unchanged" }[]> {
  const results: { workspace: string; name: string; action: "rebind" | "unchanged" }[] = [];
  const stored = new Map<string, Map<string, string>>();
  for (const secret of secrets) {
    if (!stored.has(secret.workspace))
      stored.set(
        secret.workspace,
        new Map((await secretStore.list(secret.workspace)).map((s) => [s.name, canonicalJson(s.binding)])),
      );
    const same = stored.get(secret.workspace)!.get(secret.name) === canonicalJson(secret.binding);
    results.push({ workspace: secret.workspace, name: secret.name, action: same ? "unchanged" : "rebind" });
    // Hosts were judged against the policy the file puts in force (splitPolicyFile), not the cached one.
    if (!same && !dryRun)
      await secretStore.rebind(secret.workspace, secret.name, secret.binding, actor, { checkHosts: false });
  }
  return results;
}
