/**
 * Start-up step "secrets": the workspace secrets store over the database, sealing with the
 * deployment's key ring when one is configured (else setting a secret answers 503
 * `secrets.not_configured`, and the gateway still serves). Its reading side is the parts'
 * `secrets`, which egress opens a workspace's credentials through.
 */
import type { Logger } from "pino";
import type { GatewayConfig } from "../config/gateway-config.js";
import type { PolicyService } from "../policy/policy-service.js";
import { SecretStore } from "../secrets/secret-store.js";
import { keyRingOf } from "../secrets/secrets-settings.js";
import { SecretRepository } from "../store/sql/secret-repository.js";
import type { GatewayBackends } from "./gateway-backends.js";

export function startSecrets(
  config: GatewayConfig,
  backends: Pick<GatewayBackends, "db">,
  built: {
    policies: Pick<PolicyService, "forWorkspace">;
    /** Told after each change (this replica's cache of opened secrets forgets the workspace). */
    changed: (workspace: string) => void;
    log: Logger;
  },
): SecretStore {
  const keys = config.secrets.keys;
  if (keys === undefined)
    built.log.info(
      "no secrets key ring (secrets.keys or secrets.keysFile): workspace secrets cannot be stored",
    );
  return new SecretStore({
    repository: new SecretRepository(backends.db),
    sealer: keyRingOf(config.secrets),
    allowedHostsOf: async (workspace) => (await built.policies.forWorkspace(workspace)).egressAllowHosts,
    changed: built.changed,
    log: built.log.child({ part: "secrets" }),
  });
}
