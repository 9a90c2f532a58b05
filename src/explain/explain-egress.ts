/**
 * Explain for a destination (`egressHost`): would a session of the workspace, with its own
 * narrowing (CreateSession's `sandpool` member, or the named session's lease), be let
 * through to `host[:port]`, by which rule it would be refused, and which secrets (names
 * only: explain never shows a value) the egress proxy would attach. The same decisions the
 * proxy makes (src/egress/session-grant.ts, egress-rules.ts), on the policy in force; the
 * name is not resolved, so the address checks (deployment deny ranges, default-denied
 * ranges) are the proxy's, said so in the trace.
 *
 * Its steps are a trace of their own (`egress` in the answer): a refused destination is
 * not a refused call, so it does not change the operation's decision.
 */
import { checkDestination } from "../egress/egress-rules.js";
import {
  judgeNarrowing,
  leaseEgressOf,
  type NarrowingVerdict,
  parseSessionEgress,
} from "../egress/session-egress.js";
import { composeGrant, sessionHosts } from "../egress/session-grant.js";
import type { OperationSpec } from "../operations/operation.js";
import { imageAllowed } from "../policy/decide-access.js";
import { poolServing } from "../policy/decide-pool.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import { normalizeHost } from "../policy-schema/egress-patterns.js";
import type { LeaseEgress } from "../store/coordination/records.js";
import type { ExplainDeps } from "./explain-deps.js";
import { type EgressDestinationInput, onSession } from "./explain-request.js";
import { Trace, type TraceStep } from "./explain-trace.js";

export interface EgressExplained {
  destination: string;
  decision: "allow" | "deny";
  steps: TraceStep[];
  /** The secrets the proxy would add to a request there (names). */
  secrets: string[];
}

/** A stand-in value: the grant is composed as the proxy composes it, with no value in it. */
const NO_VALUE = "";

export async function explainEgress(
  services: ExplainDeps,
  operation: OperationSpec,
  policy: EffectivePolicy,
  args: Record<string, unknown>,
  destination: EgressDestinationInput,
): Promise<EgressExplained> {
  const trace = new Trace();
  const host = normalizeHost(destination.host);
  const named = `${host}:${destination.port}`;
  const bindings = (await services.secretBindings?.(policy.workspace)) ?? [];
  const narrowing = await narrowingOf(services, operation, policy, args, bindings, trace);
  const narrowingPool = onSession(operation)
    ? (await services.sessions.find(String(args.session_id), policy.workspace))?.pool
    : undefined;

  if (!policy.enabled || !policy.egressAllowed) {
    trace.deny("policy", "policy.egress_not_allowed", {
      rule: "egress.allowed",
      field: policy.enabled ? "egressAllowed" : "enabled",
      value: false,
      detail: policy.enabled ? "this workspace has no egress" : "the workspace is disabled",
    });
    return answer(named, trace, []);
  }
  trace.pass("policy", { rule: "egress.allowed", field: "egressAllowed", value: true });
  poolStep(services, operation, policy, args, narrowingPool, trace);

  const workspaceGrant = { allowCidrs: policy.egressAllowCidrs, allowHosts: policy.egressAllowHosts };
  const settings = { denyCidrs: [], allowPorts: services.egressSettings?.allowPorts ?? [] };
  // Host names only here: ports are the deployment's (below), addresses the proxy's.
  const byWorkspace = checkDestination({ host, port: destination.port }, workspaceGrant, { denyCidrs: [] });
  if (!byWorkspace.allowed)
    trace.deny("policy", "policy.egress_not_allowed", {
      rule: "egress.host",
      field: "egressAllowHosts",
      value: policy.egressAllowHosts,
      detail: byWorkspace.reason,
    });
  else
    trace.pass("policy", {
      rule: "egress.host",
      field: "egressAllowHosts",
      value: policy.egressAllowHosts,
      detail: policy.egressAllowHosts.length === 0 ? "any host" : `'${host}' is allowed`,
    });

  const hosts = sessionHosts(policy, narrowing);
  if (narrowing?.hosts === undefined) {
    trace.skip("policy", "egress.session", "the session does not narrow its hosts");
  } else {
    const bySession =
      hosts === undefined
        ? { allowed: false as const, reason: "none of the session's hosts is still allowed by the workspace" }
        : checkDestination(
            { host, port: destination.port },
            { allowCidrs: [], allowHosts: hosts },
            { denyCidrs: [] },
          );
    if (!bySession.allowed)
      trace.deny("policy", "policy.egress_not_allowed", {
        rule: "egress.session",
        value: narrowing.hosts,
        detail: `the session's narrowing: ${bySession.reason.replace("this workspace's", "this session's")}`,
      });
    else
      trace.pass("policy", {
        rule: "egress.session",
        value: narrowing.hosts,
        detail: `'${host}' is one of the session's hosts`,
      });
  }

  const byPort = checkDestination(
    { host, port: destination.port },
    { allowCidrs: [], allowHosts: [] },
    settings,
  );
  if (!byPort.allowed)
    trace.deny("policy", "policy.egress_not_allowed", {
      rule: "egress.port",
      limit: settings.allowPorts,
      detail: `the deployment: ${byPort.reason}`,
    });
  else
    trace.pass("policy", {
      rule: "egress.port",
      limit: settings.allowPorts,
      detail: `port ${destination.port}`,
    });
  trace.skip(
    "policy",
    "egress.address",
    "not resolved here: the proxy checks every address the name resolves to (the deployment's deny ranges, loopback, private and link-local ranges unless egressAllowCidrs opens them, the gateway's own addresses)",
  );

  // The grant as the proxy composes it, values left out: which credentials a request there carries.
  const grant = composeGrant(
    policy,
    narrowing,
    bindings.map((secret) => ({ ...secret, value: NO_VALUE })),
  );
  const reachable = trace.code() === null;
  const secrets = reachable
    ? (grant?.credentials ?? [])
        .filter((credential) => matchesCredential(credential, host, destination.port))
        .map((credential) => credential.secret)
    : [];
  if (!reachable) trace.skip("policy", "egress.secret", "no secret is attached to a refused destination");
  else if (secrets.length === 0)
    trace.pass("policy", {
      rule: "egress.secret",
      detail: "no secret is bound to this destination for this session",
    });
  else
    trace.pass("policy", {
      rule: "egress.secret",
      value: secrets,
      detail: `the proxy would add ${secrets.map((name) => `'${name}'`).join(", ")} (on the paths and methods its binding names)`,
    });
  return answer(named, trace, secrets);
}

function answer(destination: string, trace: Trace, secrets: string[]): EgressExplained {
  return { destination, decision: trace.code() === null ? "allow" : "deny", steps: trace.steps, secrets };
}

function matchesCredential(
  credential: { hosts: readonly string[]; ports?: readonly number[] },
  host: string,
  port: number,
): boolean {
  const hostMatches = credential.hosts.some(
    (pattern) =>
      checkDestination({ host, port }, { allowCidrs: [], allowHosts: [pattern] }, { denyCidrs: [] }).allowed,
  );
  return hostMatches && (!credential.ports?.length || credential.ports.includes(port));
}

/** The session's narrowing: CreateSession's `sandpool` member (judged), or the named session's lease. */
async function narrowingOf(
  services: ExplainDeps,
  operation: OperationSpec,
  policy: EffectivePolicy,
  args: Record<string, unknown>,
  bindings: ReadonlyArray<{ name: string }>,
  trace: Trace,
): Promise<LeaseEgress | undefined> {
  if (onSession(operation)) {
    const lease = await services.sessions.find(String(args.session_id), policy.workspace);
    if (!lease) {
      trace.skip("policy", "egress.narrowing", "no such session: the workspace's egress, not narrowed");
      return undefined;
    }
    const egress = leaseEgressOf(lease);
    trace.pass("policy", {
      rule: "egress.narrowing",
      value: egress ?? null,
      detail: "the session's own narrowing",
    });
    return egress;
  }
  let verdict: NarrowingVerdict;
  try {
    verdict = judgeNarrowing(
      parseSessionEgress(args),
      policy,
      bindings.map((secret) => secret.name),
    );
  } catch (error) {
    trace.skip(
      "policy",
      "egress.narrowing",
      `args.sandpool is malformed (${(error as Error).message}): not narrowed`,
    );
    return undefined;
  }
  if (!verdict.allowed) {
    trace.skip("policy", "egress.narrowing", `${verdict.message}: the session would not be created`);
    return undefined;
  }
  trace.pass("policy", { rule: "egress.narrowing", value: verdict.egress ?? null });
  return verdict.egress;
}

/**
 * Whether the session's sandbox has the proxy at all: only egress pools' sandboxes do. The
 * pool a new session would get (the one CreateSession chooses), or the named session's.
 */
function poolStep(
  services: ExplainDeps,
  operation: OperationSpec,
  policy: EffectivePolicy,
  args: Record<string, unknown>,
  sessionPool: string | undefined,
  trace: Trace,
): void {
  const pools = services.pools.list();
  let pool: { name: string; egress?: boolean } | undefined;
  if (onSession(operation)) pool = pools.find((candidate) => candidate.name === sessionPool);
  else {
    const image = imageAllowed(policy, (args as { image?: string | null }).image);
    pool = image.allowed ? poolServing(pools, image.image!, policy).pool : undefined;
  }
  if (!pool)
    trace.skip("policy", "egress.pool", "no pool to look at (no session, or no pool serves the image)");
  else if (!pool.egress)
    trace.deny("policy", "policy.egress_not_allowed", {
      rule: "egress.pool",
      value: pool.name,
      detail: `pool '${pool.name}' has no egress: its sandboxes have no way out at all`,
    });
  else
    trace.pass("policy", { rule: "egress.pool", value: pool.name, detail: `pool '${pool.name}' has egress` });
}
