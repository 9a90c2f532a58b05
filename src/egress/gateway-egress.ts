/**
 * The gateway's egress proxy bound to its sessions: which session holds a sandbox now, and
 * what that session may reach and present (session-grant.ts). The docker runtime attaches a
 * proxy socket per egress sandbox (it is built before the policy and the store exist, so
 * those are bound later, by startGateway); each connection the sandbox makes asks afresh, so
 * a policy edit applies to the next one, and a secret removed stops being sent within the
 * secrets cache's few seconds (src/secrets/secrets-cache.ts).
 *
 * A sandbox is reused across its workspace's sessions (src/pool/sandbox-reuse.ts), so the
 * holder is remembered by its lease key, never for the sandbox's life: each connection reads
 * that one lease (a single keyed read) and takes it only while it still names this sandbox;
 * once its session has ended the leases are looked through again for the next holder. One
 * session's grant (its hosts, its secrets) therefore never serves the next one's code.
 * Before its lease a sandbox runs no user code, so it makes no connections.
 */
import type { Logger } from "pino";
import type { SandboxEgress } from "../runtime/docker/sandbox-egress.js";
import type { OpenedSecret } from "../secrets/workspace-secrets.js";
import type { Lease, LeaseKey } from "../store/coordination/records.js";

import { EgressProxy } from "./egress-proxy.js";
import type { EgressProxyOptions, EgressProxySettings } from "./egress-proxy-options.js";
import type { EgressResolver } from "./egress-resolve.js";
import type { EgressGrant } from "./egress-rules.js";
import { leaseEgressOf } from "./session-egress.js";
import { composeGrant } from "./session-grant.js";

/**
 * How long "no lease holds this sandbox" is believed before the leases are read again. Short:
 * the only unleased sandbox that makes connections is one whose session just ended (its
 * processes being killed by the scrub, which takes tens of milliseconds), and the same sandbox
 * may serve the workspace's next session right after; a miss believed longer would refuse that
 * session's first connections. This only keeps a dying session's flood from turning into a
 * flood of scans (ten a second per sandbox at most).
 */
const MISS_MEMORY_MS = 100;

/** What egress reads of a workspace's effective policy. */
export interface EgressPolicy {
  enabled: boolean;
  egressAllowed: boolean;
  egressAllowCidrs: string[];
  egressAllowHosts: string[];
}

export interface EgressOwnership {
  /** Every lease: read only to find a sandbox's new holder (once per session, not per connection). */
  leases(): Promise<Lease[]>;
  /** One lease by its key: whether the remembered holder still holds the sandbox. */
  lease(key: LeaseKey): Promise<Lease | undefined>;
  /** The egress part of the workspace's policy in force (the policy service's effective policy). */
  policyFor(workspace: string): Promise<EgressPolicy>;
  /** The workspace's secrets, opened (briefly cached: SecretsCache); absent: no secrets store. */
  secretsOf?(workspace: string): Promise<OpenedSecret[]>;
}

/** Who a sandbox's proxy event is about: the session holding it when it last asked for a grant. */
export interface EgressHolder {
  workspace: string;
  sessionId: string;
}

/** What the gateway does with the proxy's events (metrics, audit); bound with the ownership. */
export interface EgressHooks {
  /** A secret was added to a request; `host` is the binding pattern it matched (bounded). */
  credentialUsed?(holder: EgressHolder, secret: string, host: string): void;
  /** A request the proxy refused by policy (403) for a leased sandbox. */
  refused?(holder: EgressHolder, host: string, reason: string): void;
}

/** The label a credential's host reads as when the proxy names one the grant did not bind. */
export const UNBOUND_HOST = "(unbound)";

interface Held {
  key: EgressHolder;
  /** The grant last composed for it: what a credential event is checked against. */
  grant?: EgressGrant;
}

export class GatewayEgress implements SandboxEgress {
  readonly proxy: EgressProxy;
  private readonly holders = new Map<string, Held>();
  private readonly lookups = new Map<string, Promise<Lease | undefined>>();
  /** When a sandbox was last found unleased (cleared when its proxy closes). */
  private readonly misses = new Map<string, number>();
  private ownership: EgressOwnership | undefined;
  private hooks: EgressHooks = {};

  /** `options.injection`: credentials added on the way out (TLS terminated with the deployment CA). */
  constructor(
    settings: EgressProxySettings,
    log: Logger,
    resolve?: EgressResolver,
    private readonly options: Partial<Pick<EgressProxyOptions, "injection">> = {},
  ) {
    this.proxy = new EgressProxy({
      settings,
      log,
      resolve,
      ...options,
      onCredentialUsed: (sandboxId, secret, host) => this.credentialUsed(sandboxId, secret, host),
      onRefused: (sandboxId, host, reason, status) => this.refused(sandboxId, host, reason, status),
    });
  }

  /** Injects credentials from now on: sandboxes started after this trust its CA. */
  useInjection(injection: NonNullable<EgressProxyOptions["injection"]>): void {
    this.options.injection = injection;
    this.proxy.useInjection(injection);
  }

  /** What egress sandboxes trust besides the system roots (written in their directory). */
  trustedCaPem(): string | undefined {
    return this.options.injection?.leaves.caPem;
  }

  bind(ownership: EgressOwnership, hooks: EgressHooks = {}): void {
    this.ownership = ownership;
    this.hooks = hooks;
  }

  open(sandboxId: string, socketPath: string): Promise<void> {
    return this.proxy.open(sandboxId, socketPath, () => this.grantFor(sandboxId));
  }

  async close(sandboxId: string): Promise<void> {
    this.holders.delete(sandboxId);
    this.misses.delete(sandboxId);
    await this.proxy.close(sandboxId);
  }

  serves(sandboxId: string): boolean {
    return this.proxy.usage(sandboxId) !== undefined;
  }

  served(): string[] {
    return this.proxy.sandboxIds();
  }

  closeAll(): Promise<void> {
    return this.proxy.closeAll();
  }

  /** Undefined (refuse everything) for an unleased sandbox, a workspace without egress, or no host left. */
  async grantFor(sandboxId: string): Promise<EgressGrant | undefined> {
    const ownership = this.ownership;
    if (!ownership) return undefined;
    const lease = await this.holderOf(sandboxId, ownership);
    if (!lease) return undefined;
    const policy = await ownership.policyFor(lease.workspace);
    const secrets =
      policy.enabled && policy.egressAllowed && ownership.secretsOf
        ? await ownership.secretsOf(lease.workspace)
        : [];
    const grant = composeGrant(policy, leaseEgressOf(lease), secrets);
    const held = this.holders.get(sandboxId);
    if (held && held.key.sessionId === lease.sessionId) held.grant = grant;
    return grant;
  }

  /**
   * The lease holding the sandbox. The remembered holder costs one keyed read; a holder gone
   * (its session ended) or never known costs one read of every lease, shared by the
   * connections that wait on it, and a miss is remembered briefly.
   */
  private async holderOf(sandboxId: string, ownership: EgressOwnership): Promise<Lease | undefined> {
    const known = this.holders.get(sandboxId);
    if (known) {
      const lease = await ownership.lease(known.key);
      if (lease && lease.sandbox.sandboxId === sandboxId) return lease;
      // Its session ended (or moved to another sandbox): whoever holds the sandbox now is
      // found afresh, and nothing of the old session's grant is kept.
      if (this.holders.get(sandboxId) === known) this.holders.delete(sandboxId);
    }
    const missedAt = this.misses.get(sandboxId);
    if (missedAt !== undefined && Date.now() - missedAt < MISS_MEMORY_MS) return undefined;
    const joined = this.lookups.get(sandboxId);
    if (!joined) return this.scan(sandboxId, ownership);
    // A scan begun before this ask may have read a lease that has ended since, its sandbox
    // now the workspace's next session's: what it found is confirmed by key, else looked for
    // afresh, so a session never gets its predecessor's grant.
    const found = await joined;
    if (!found) return undefined;
    const now = await ownership.lease({ workspace: found.workspace, sessionId: found.sessionId });
    return now && now.sandbox.sandboxId === sandboxId ? now : this.scan(sandboxId, ownership);
  }

  /** One read of every lease for the sandbox's holder, shared by the asks that come meanwhile. */
  private scan(sandboxId: string, ownership: EgressOwnership): Promise<Lease | undefined> {
    const lookup = ownership
      .leases()
      .then((leases) => {
        const lease = leases.find((l) => l.sandbox.sandboxId === sandboxId);
        if (lease && this.serves(sandboxId))
          this.holders.set(sandboxId, { key: { workspace: lease.workspace, sessionId: lease.sessionId } });
        if (lease) this.misses.delete(sandboxId);
        else this.misses.set(sandboxId, Date.now());
        return lease;
      })
      .finally(() => {
        if (this.lookups.get(sandboxId) === lookup) this.lookups.delete(sandboxId);
      });
    this.lookups.set(sandboxId, lookup);
    return lookup;
  }

  private credentialUsed(sandboxId: string, secret: string, host: string): void {
    const held = this.holders.get(sandboxId);
    if (!held || !this.hooks.credentialUsed) return;
    // The metric's host label is the binding's pattern, as the operator wrote it: anything
    // else the proxy might pass (a requested name) would make the label set unbounded.
    const bound = held.grant?.credentials?.some((c) => c.secret === secret && c.hosts.includes(host));
    this.hooks.credentialUsed(held.key, secret, bound ? host : UNBOUND_HOST);
  }

  private refused(sandboxId: string, host: string, reason: string, status: number): void {
    // Policy refusals only: a bound reached (429) or an unreachable host (502) is logged by
    // the proxy, not audited. An unleased sandbox has no workspace to audit for.
    if (status !== 403) return;
    const held = this.holders.get(sandboxId);
    if (held) this.hooks.refused?.(held.key, host, reason);
  }
}
