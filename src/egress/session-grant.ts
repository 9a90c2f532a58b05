/**
 * A session's egress grant: what its workspace's policy allows, narrowed by the session's own
 * hosts, plus the credentials the proxy adds on the way out: the workspace's secrets the
 * session may use, rendered, each only for the hosts the session can reach. Pure: the
 * policy, the lease's narrowing and the opened secrets in, the grant out (or undefined:
 * refuse everything). The gateway's egress (gateway-egress.ts) asks this per connection;
 * explain (src/explain/) reports the same decision.
 */
import { hostPatternWithin } from "../policy-schema/egress-patterns.js";
import type { OpenedSecret } from "../secrets/workspace-secrets.js";
import type { LeaseEgress } from "../store/coordination/records.js";
import type { EgressCredential, EgressGrant } from "./egress-rules.js";

/** What a grant reads of the workspace's effective policy. */
export interface GrantPolicy {
  enabled: boolean;
  egressAllowed: boolean;
  egressAllowCidrs: string[];
  egressAllowHosts: string[];
}

/**
 * The hosts a session may reach: the workspace's list, or the session's where it narrowed
 * it (kept only as far as the workspace's list in force still covers it: the policy may
 * have narrowed since the session began). Undefined: no host at all. [] means any host, so
 * a narrowing that lost every entry must never come out as [].
 */
export function sessionHosts(policy: GrantPolicy, narrowing: LeaseEgress | undefined): string[] | undefined {
  const asked = narrowing?.hosts;
  if (asked === undefined) return policy.egressAllowHosts;
  const kept =
    policy.egressAllowHosts.length === 0
      ? asked
      : asked.filter((host) => hostPatternWithin(host, policy.egressAllowHosts));
  return kept.length === 0 ? undefined : kept;
}

/**
 * A secret's binding hosts the session can reach: each binding pattern some allowed pattern
 * overlaps (either within the other). The binding's own patterns are kept, not the
 * intersection: the proxy refuses a host outside `allowHosts` before it looks at a
 * credential, and the binding pattern is what metrics name (bounded by the operator).
 */
export function reachableBindingHosts(bound: readonly string[], allowHosts: readonly string[]): string[] {
  if (allowHosts.length === 0) return [...bound];
  return bound.filter(
    (pattern) =>
      hostPatternWithin(pattern, allowHosts) ||
      allowHosts.some((allowed) => hostPatternWithin(allowed, [pattern])),
  );
}

/** The header and value a secret is presented as. */
export function renderPresentation(secret: OpenedSecret): { header: string; value: string } {
  const presentation = secret.binding.presentation;
  if ("basicAuth" in presentation) {
    const pair = `${presentation.basicAuth.username}:${secret.value}`;
    return { header: "Authorization", value: `Basic ${Buffer.from(pair, "utf8").toString("base64")}` };
  }
  // Every `{{secret}}`; a function replacement so `$&` or `$1` in the value stay literal.
  return {
    header: presentation.header,
    value: presentation.template.replaceAll("{{secret}}", () => secret.value),
  };
}

/** The credentials a session's grant carries: its secrets, rendered, for the hosts it can reach. */
export function sessionCredentials(
  secrets: readonly OpenedSecret[],
  narrowing: LeaseEgress | undefined,
  allowHosts: readonly string[],
): EgressCredential[] {
  const wanted = narrowing?.secrets === undefined ? undefined : new Set(narrowing.secrets);
  const credentials: EgressCredential[] = [];
  for (const secret of secrets) {
    if (wanted && !wanted.has(secret.name)) continue;
    const hosts = reachableBindingHosts(secret.binding.hosts, allowHosts);
    if (hosts.length === 0) continue;
    const { ports, paths, methods } = secret.binding;
    const presented = renderPresentation(secret);
    // A value with a line break or NUL would write headers of its own into the request.
    if (/[\r\n\0]/.test(presented.value) || /[\r\n\0:]/.test(presented.header)) continue;
    credentials.push({
      secret: secret.name,
      hosts,
      ...(ports?.length ? { ports: [...ports] } : {}),
      ...(paths?.length ? { paths: [...paths] } : {}),
      ...(methods?.length ? { methods: methods.map((method) => method.toUpperCase()) } : {}),
      ...presented,
    });
  }
  return credentials;
}

/** The grant, or undefined (refuse everything) for a disabled workspace, one without egress, or no host left. */
export function composeGrant(
  policy: GrantPolicy,
  narrowing: LeaseEgress | undefined,
  secrets: readonly OpenedSecret[],
): EgressGrant | undefined {
  if (!policy.enabled || !policy.egressAllowed) return undefined;
  const allowHosts = sessionHosts(policy, narrowing);
  if (allowHosts === undefined) return undefined;
  const credentials = sessionCredentials(secrets, narrowing, allowHosts);
  return {
    allowCidrs: policy.egressAllowCidrs,
    allowHosts,
    ...(credentials.length > 0 ? { credentials } : {}),
  };
}
