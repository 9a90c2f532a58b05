/**
 * The `secrets` of a policy file's workspace entries (docs/secrets.md, "Policy files"): the
 * bindings of secrets whose values were stored through the admin API. A file carries no
 * values, so it can only rebind a secret that exists; anything else refuses the whole file
 * before anything is applied: a `value` in an entry, a secret with no value stored yet, a
 * binding the admin API would refuse, a host outside the egressAllowHosts the file gives the
 * workspace. A secret the file does not name is left as it is.
 */
import { issueProblems } from "../contract/schemas.js";
import { hostPatternWithin } from "../policy-schema/egress-patterns.js";
import {
  bindingOf,
  SECRET_NAME_PATTERN,
  SECRET_NAME_RULE,
  secretBindingSchema,
} from "../secrets/secret-binding-schema.js";
import type { SecretStore } from "../secrets/secret-store.js";
import type { SecretBinding } from "../secrets/workspace-secrets.js";

export interface FileSecret {
  workspace: string;
  name: string;
  binding: SecretBinding;
}

export interface SplitPolicyFile {
  /** The file without its `secrets` entries: what the policy set validates and applies. */
  policyInput: unknown;
  secrets: FileSecret[];
  problems: string[];
}

const isMap = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * Takes the `secrets` out of every workspace entry and judges them. `ceiling`: the deployment's
 * egressAllowHosts, which the hosts an entry gives are narrowed within (as the policy in force is).
 */
export async function splitPolicyFile(
  input: unknown,
  secretStore: Pick<SecretStore, "existing">,
  ceiling: readonly string[],
): Promise<SplitPolicyFile> {
  if (!isMap(input) || !isMap(input.policies)) return { policyInput: input, secrets: [], problems: [] };
  const policies: Record<string, unknown> = {};
  const secrets: FileSecret[] = [];
  const problems: string[] = [];
  for (const [workspace, entry] of Object.entries(input.policies)) {
    if (!isMap(entry) || !("secrets" in entry)) {
      policies[workspace] = entry;
      continue;
    }
    const { secrets: named, ...fields } = entry;
    policies[workspace] = fields;
    if (named === null || named === undefined) continue;
    if (!isMap(named)) {
      problems.push(`${workspace}: secrets must be a map of secret name to binding`);
      continue;
    }
    const reachable = hostsInForce(fields.egressAllowHosts, ceiling);
    const mine: FileSecret[] = [];
    for (const [name, raw] of Object.entries(named)) {
      const at = `${workspace}: secrets.${name}`;
      if (!SECRET_NAME_PATTERN.test(name)) {
        problems.push(`${at}: not a secret name (${SECRET_NAME_RULE})`);
        continue;
      }
      if (isMap(raw) && "value" in raw) {
        problems.push(`${at}: a policy file carries no values: store it with \`sandpool secrets set\``);
        continue;
      }
      const parsed = secretBindingSchema.safeParse(raw ?? {});
      if (!parsed.success) {
        for (const problem of issueProblems(parsed.error, secretBindingSchema))
          problems.push(`${at}.${problem.replace(/^body: /, "")}`);
        continue;
      }
      const outside =
        reachable.length === 0 ? [] : parsed.data.hosts.filter((h) => !hostPatternWithin(h, reachable));
      if (outside.length > 0) {
        problems.push(
          `${at}.hosts: ${outside.join(", ")} outside the workspace's egressAllowHosts (${reachable.join(", ")})`,
        );
        continue;
      }
      mine.push({ workspace, name, binding: bindingOf(parsed.data) });
    }
    const stored = await secretStore.existing(
      workspace,
      mine.map((secret) => secret.name),
    );
    for (const secret of mine) {
      if (stored.has(secret.name)) secrets.push(secret);
      else
        problems.push(
          `${workspace}: secrets.${secret.name}: no value stored yet: store it first (sandpool secrets set ${workspace} ${secret.name} ... --value-file FILE)`,
        );
    }
  }
  return { policyInput: { ...input, policies }, secrets, problems };
}

/** The egressAllowHosts a file entry puts in force: its own within the ceiling, else the ceiling. */
function hostsInForce(entryHosts: unknown, ceiling: readonly string[]): string[] {
  if (!Array.isArray(entryHosts) || !entryHosts.every((host) => typeof host === "string"))
    return [...ceiling];
  if (ceiling.length === 0) return entryHosts;
  return entryHosts.filter((host) => hostPatternWithin(host, ceiling));
}

/** A JSON value with its keys sorted: bindings compared whatever order Postgres keeps keys in. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (isMap(value))
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`)
      .join(",")}}`;
  return JSON.stringify(value);
}
