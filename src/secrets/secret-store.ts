/**
 * Workspace secrets as the gateway keeps them: set (sealed with the key ring, audited without
 * the value), list and remove for operators, and opened for egress alone (`SecretsReader`).
 * No method but `openedSecretsOf` returns a value, and nothing here logs one.
 *
 * Without a key ring (serve with no `secrets.keys`), setting a secret is refused with 503
 * `secrets.not_configured` naming the setting; listing and removing still work, so a
 * deployment that lost its keys can clean up. A workspace whose policy narrows egress to
 * some hosts (egressAllowHosts) cannot bind a secret to a host outside them: a credential for
 * a destination the workspace may not reach is a mistake, refused with 422 naming the host.
 */
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import { hostPatternWithin } from "../policy-schema/egress-patterns.js";
import type { SecretRepository, SecretRow } from "../store/sql/secret-repository.js";
import { SECRET_NAME_PATTERN, SECRET_NAME_RULE } from "./secret-binding-schema.js";
import {
  type OpenedSecret,
  type Sealer,
  type SecretBinding,
  type SecretDescription,
  type SecretsReader,
  secretSealContext,
} from "./workspace-secrets.js";

export const SECRETS_NOT_CONFIGURED =
  "workspace secrets need a key ring to seal them: set secrets.keys or secrets.keysFile " +
  "(SANDPOOL_SECRETS_KEYS or SANDPOOL_SECRETS_KEYS_FILE; docs/secrets.md, Keys)";

export interface SecretStoreDeps {
  repository: SecretRepository;
  /** The deployment's key ring; undefined when none is configured. */
  sealer: Sealer | undefined;
  /** The workspace's egressAllowHosts in force (empty: no host narrowing). */
  allowedHostsOf(workspace: string): Promise<readonly string[]>;
  /** Told after each change of a workspace's secrets (this replica's caches drop it at once). */
  changed?: (workspace: string) => void;
  log: Logger;
}

export interface SetSecret {
  value: string;
  binding: SecretBinding;
}

export class SecretStore implements SecretsReader {
  constructor(private readonly deps: SecretStoreDeps) {}

  /** Whether values can be sealed and opened here (a key ring is configured). */
  get configured(): boolean {
    return this.deps.sealer !== undefined;
  }

  /** Creates or replaces a secret; `created` is false when it replaced one. */
  async set(
    workspace: string,
    name: string,
    secret: SetSecret,
    actor: string,
  ): Promise<{ description: SecretDescription; created: boolean }> {
    const sealer = this.sealerOrRefuse();
    checkName(name);
    await this.checkHostsReachable(workspace, secret.binding);
    const sealedValue = sealer.seal(Buffer.from(secret.value, "utf8"), secretSealContext(workspace, name));
    const { row, created } = await this.deps.repository.put(
      { workspace, name, binding: secret.binding, sealedValue },
      actor,
    );
    this.deps.changed?.(workspace);
    return { description: describe(row), created };
  }

  /**
   * Replaces the binding of an existing secret, keeping its value (policy files carry no
   * values); undefined when the workspace has no secret of that name.
   */
  async rebind(
    workspace: string,
    name: string,
    binding: SecretBinding,
    actor: string,
    options: { checkHosts?: boolean } = {},
  ): Promise<SecretDescription | undefined> {
    checkName(name);
    // A policy file judges hosts against the policy it applies itself (the cache may be older).
    if (options.checkHosts !== false) await this.checkHostsReachable(workspace, binding);
    const row = await this.deps.repository.rebind({ workspace, name, binding }, actor);
    this.deps.changed?.(workspace);
    return row && describe(row);
  }

  async list(workspace: string): Promise<SecretDescription[]> {
    return (await this.deps.repository.list(workspace)).map(describe);
  }

  /** The names among `names` the workspace has a secret of. */
  existing(workspace: string, names: readonly string[]): Promise<Set<string>> {
    return this.deps.repository.existing(workspace, names);
  }

  /** Removes a secret; 404 `request.not_found` when the workspace has none of that name. */
  async remove(workspace: string, name: string, actor: string): Promise<void> {
    checkName(name);
    if (!(await this.deps.repository.remove(workspace, name, actor)))
      throw new SandpoolError("request.not_found", `workspace ${workspace} has no secret named ${name}`);
    this.deps.changed?.(workspace);
  }

  /**
   * Every secret of the workspace with its value, for the egress proxy. A value that does not
   * open (sealed with a key since removed from the ring, or changed at rest) is left out and
   * logged by name: the other secrets still work, and the request goes out without it.
   */
  async openedSecretsOf(workspace: string): Promise<OpenedSecret[]> {
    const rows = await this.deps.repository.sealedOf(workspace);
    if (rows.length === 0) return [];
    const { sealer, log } = this.deps;
    if (sealer === undefined) {
      log.warn(
        { workspace, secrets: rows.length },
        `workspace secrets not opened: ${SECRETS_NOT_CONFIGURED}`,
      );
      return [];
    }
    const opened: OpenedSecret[] = [];
    for (const row of rows) {
      try {
        const value = sealer.open(row.sealedValue, secretSealContext(workspace, row.name)).toString("utf8");
        opened.push({ name: row.name, binding: row.binding as SecretBinding, value });
      } catch (error) {
        log.warn(
          { workspace, secret: row.name, reason: (error as Error).message },
          "a workspace secret does not open",
        );
      }
    }
    return opened;
  }

  private sealerOrRefuse(): Sealer {
    if (this.deps.sealer === undefined)
      throw new SandpoolError("secrets.not_configured", SECRETS_NOT_CONFIGURED);
    return this.deps.sealer;
  }

  private async checkHostsReachable(workspace: string, binding: SecretBinding): Promise<void> {
    const allowed = await this.deps.allowedHostsOf(workspace);
    if (allowed.length === 0) return;
    const outside = binding.hosts.filter((host) => !hostPatternWithin(host, allowed));
    if (outside.length > 0)
      throw new SandpoolError(
        "request.malformed",
        `hosts: ${outside.join(", ")} ${outside.length === 1 ? "is" : "are"} outside the workspace's egressAllowHosts (${allowed.join(", ")}): its sandboxes could never send the secret there`,
      );
  }
}

function checkName(name: string): void {
  if (!SECRET_NAME_PATTERN.test(name))
    throw new SandpoolError("request.malformed", `not a secret name (${SECRET_NAME_RULE})`);
}

function describe(row: SecretRow): SecretDescription {
  return {
    name: row.name,
    binding: row.binding as SecretBinding,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
