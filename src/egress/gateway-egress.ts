/**
 * The gateway's egress proxy bound to its policy: which workspace holds a sandbox, and what
 * that workspace may reach now. The docker runtime attaches a proxy socket per egress sandbox
 * (it is built before the policy and the store exist, so those are bound later, by
 * startGateway); each connection the sandbox makes asks afresh, so a policy edit applies to
 * the next one.
 *
 * Before its lease a sandbox runs no user code, so it makes no connections; the first one
 * after a lease finds the owner among the leases and remembers it for the sandbox's life (a
 * sandbox is never reused across sessions).
 */
import type { Logger } from "pino";
import type { SandboxEgress } from "../runtime/docker/sandbox-egress.js";
import type { Lease } from "../store/coordination/records.js";

import {
  EgressProxy,
  type EgressProxyOptions,
  type EgressProxySettings,
  type EgressResolver,
} from "./egress-proxy.js";
import type { EgressGrant } from "./egress-rules.js";

/** How long "no lease holds this sandbox" is believed before the leases are read again. */
const MISS_MEMORY_MS = 2_000;

/** What egress reads of a workspace's effective policy. */
export interface EgressPolicy {
  enabled: boolean;
  egressAllowed: boolean;
  egressAllowCidrs: string[];
  egressAllowHosts: string[];
}

export interface EgressOwnership {
  leases(): Promise<Lease[]>;
  /** The egress part of the workspace's policy in force (the policy service's effective policy). */
  policyFor(workspace: string): Promise<EgressPolicy>;
}

export class GatewayEgress implements SandboxEgress {
  readonly proxy: EgressProxy;
  private readonly owners = new Map<string, string>();
  private readonly lookups = new Map<string, Promise<string | undefined>>();
  /** When a sandbox was last found unleased (cleared when its proxy closes). */
  private readonly misses = new Map<string, number>();
  private ownership: EgressOwnership | undefined;

  /** `injection`: credentials added on the way out (TLS terminated with the deployment CA). */
  constructor(
    settings: EgressProxySettings,
    log: Logger,
    resolve?: EgressResolver,
    private readonly injection: Pick<EgressProxyOptions, "injection" | "onCredentialUsed" | "onRefused"> = {},
  ) {
    this.proxy = new EgressProxy({ settings, log, resolve, ...injection });
  }

  /** What egress sandboxes trust besides the system roots (written in their directory). */
  trustedCaPem(): string | undefined {
    return this.injection.injection?.leaves.caPem;
  }

  bind(ownership: EgressOwnership): void {
    this.ownership = ownership;
  }

  open(sandboxId: string, socketPath: string): Promise<void> {
    return this.proxy.open(sandboxId, socketPath, () => this.grantFor(sandboxId));
  }

  async close(sandboxId: string): Promise<void> {
    this.owners.delete(sandboxId);
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

  /** Undefined (refuse everything) for an unleased sandbox or a workspace without egress. */
  async grantFor(sandboxId: string): Promise<EgressGrant | undefined> {
    if (!this.ownership) return undefined;
    const workspace = await this.ownerOf(sandboxId, this.ownership);
    if (!workspace) return undefined;
    const policy = await this.ownership.policyFor(workspace);
    if (!policy.enabled || !policy.egressAllowed) return undefined;
    return { allowCidrs: policy.egressAllowCidrs, allowHosts: policy.egressAllowHosts };
  }

  /**
   * The lease list is read once per sandbox while concurrent connections wait on that one
   * read, and a miss (a lease already ended) is remembered briefly: a burst of connections
   * (pip's first dozen) never turns into a burst of scans of every lease.
   */
  private ownerOf(sandboxId: string, ownership: EgressOwnership): Promise<string | undefined> {
    const known = this.owners.get(sandboxId);
    if (known) return Promise.resolve(known);
    const missedAt = this.misses.get(sandboxId);
    if (missedAt !== undefined && Date.now() - missedAt < MISS_MEMORY_MS) return Promise.resolve(undefined);
    let lookup = this.lookups.get(sandboxId);
    if (!lookup) {
      lookup = ownership
        .leases()
        .then((leases) => {
          const workspace = leases.find((l) => l.sandbox.sandboxId === sandboxId)?.workspace;
          if (workspace && this.serves(sandboxId)) this.owners.set(sandboxId, workspace);
          if (!workspace) this.misses.set(sandboxId, Date.now());
          return workspace;
        })
        .finally(() => this.lookups.delete(sandboxId));
      this.lookups.set(sandboxId, lookup);
    }
    return lookup;
  }
}
