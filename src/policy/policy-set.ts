/**
 * Policy as code: a whole set of workspace policies (`sandpool policy apply -f`, Helm values
 * `policies:`) checked at once. The set is `{ policies: { <workspace>: { <field>: value } } }`;
 * a field left out of an entry is no narrowing (the deployment value), `enabled` defaults to
 * true. Every problem of every entry is collected, so one refusal lists them all.
 */
import { workspaceIdPattern } from "../auth/workspace-claim.js";
import { malformed, SandpoolError } from "../contract/error-codes.js";
import type { DeploymentPolicy } from "../policy-schema/deployment-policy.js";
import { noNarrowing } from "../policy-schema/policy-fields.js";
import type { EditablePolicyFields } from "../store/sql/policy-row.js";
import { validatePolicyEdit } from "./workspace-policy-fields.js";

/** The most workspaces one set may hold. */
export const MAX_POLICY_SET = 10_000;

/** The validated set, in workspace order; throws `request.malformed` listing every problem. */
export function validatePolicySet(
  input: unknown,
  deployment: DeploymentPolicy,
  resourceClasses: readonly string[],
): Map<string, EditablePolicyFields> {
  const problems: string[] = [];
  const policies = (input as { policies?: unknown } | null)?.policies;
  const extra =
    input !== null && typeof input === "object" && !Array.isArray(input)
      ? Object.keys(input).filter((key) => key !== "policies")
      : [];
  if (input === null || typeof input !== "object" || Array.isArray(input))
    throw new SandpoolError(
      "request.malformed",
      "the body must be an object: { policies: { <workspace>: {...} } }",
    );
  if (extra.length > 0) problems.push(`unknown top-level key(s): ${extra.join(", ")} (only 'policies')`);
  // `policies:` with nothing under it (YAML null) is the empty set: every row is removed.
  if (
    policies !== undefined &&
    policies !== null &&
    (typeof policies !== "object" || Array.isArray(policies))
  )
    problems.push("policies must be a map of workspace id to fields");
  const entries =
    policies && typeof policies === "object" && !Array.isArray(policies) ? Object.entries(policies) : [];
  if (policies === undefined) problems.push("policies is missing (write `policies: {}` to remove every row)");
  if (entries.length > MAX_POLICY_SET)
    problems.push(`${entries.length} workspaces; at most ${MAX_POLICY_SET}`);
  const set = new Map<string, EditablePolicyFields>();
  for (const [workspace, fields] of entries) {
    if (!workspaceIdPattern.test(workspace)) {
      problems.push(
        `${workspace}: not a valid workspace id (letters, digits, . _ : - only, at most 128, starting with a letter or digit)`,
      );
      continue;
    }
    if (fields !== null && (typeof fields !== "object" || Array.isArray(fields))) {
      problems.push(`${workspace}: expected a map of fields (or nothing for no narrowing)`);
      continue;
    }
    try {
      const edit = { ...noNarrowing, ...(fields ?? {}) };
      const valid = validatePolicyEdit(edit, deployment, resourceClasses);
      set.set(workspace, { ...noNarrowing, ...valid } as EditablePolicyFields);
    } catch (error) {
      if (!(error instanceof SandpoolError)) throw error;
      for (const problem of error.problems ?? [error.message]) problems.push(`${workspace}: ${problem}`);
    }
  }
  if (problems.length > 0) throw malformed(problems);
  return new Map([...set.entries()].sort(([a], [b]) => a.localeCompare(b)));
}
