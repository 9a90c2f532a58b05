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
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { SandboxEgress } from "../runtime/docker/sandbox-egress.js";
import type { Lease } from "../store/coordination/records.js";
import { EgressProxy, type EgressProxySettings, type EgressResolver } from "./egress-proxy.js";
import type { EgressGrant } from "./egress-rules.js";

export interface EgressOwnership {
  leases(): Promise<Lease[]>;
  policyFor(workspace: string): Promise<EffectivePolicy>;
}

export class GatewayEgress implements SandboxEgress {
  readonly proxy: EgressProxy;
  private readonly owners = new Map<string, string>();
  private ownership: EgressOwnership | undefined;

  constructor(settings: EgressProxySettings, log: Logger, resolve?: EgressResolver) {
    this.proxy = new EgressProxy({ settings, log, resolve });
  }

  bind(ownership: EgressOwnership): void {
    this.ownership = ownership;
  }

  open(sandboxId: string, socketPath: string): Promise<void> {
    return this.proxy.open(sandboxId, socketPath, () => this.grantFor(sandboxId));
  }

  async close(sandboxId: string): Promise<void> {
    this.owners.delete(sandboxId);
    await this.proxy.close(sandboxId);
  }

  serves(sandboxId: string): boolean {
    return this.proxy.usage(sandboxId) !== undefined;
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

  private async ownerOf(sandboxId: string, ownership: EgressOwnership): Promise<string | undefined> {
    const known = this.owners.get(sandboxId);
    if (known) return known;
    const lease = (await ownership.leases()).find((l) => l.sandbox.sandboxId === sandboxId);
    if (lease && this.serves(sandboxId)) this.owners.set(sandboxId, lease.workspace);
    return lease?.workspace;
  }
}
