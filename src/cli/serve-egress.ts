/**
 * `sandpool serve`'s egress proxy, for a configuration with egress pools: the filtering
 * proxy, and credential injection with the deployment's egress CA (the operator's files, else
 * the one kept in Postgres, its key sealed by the secrets key ring). Without a CA (no files,
 * no key ring) the proxy still filters; a CONNECT to a host a credential is bound to is then
 * refused (503), never tunnelled bare, and none can be bound anyway without a key ring.
 */
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { GatewayConfig } from "../config/gateway-config.js";
import { GatewayEgress } from "../egress/gateway-egress.js";
import { egressInjectionOf, loadEgressCa } from "../egress/tls/egress-ca-source.js";
import { KeyRing } from "../secrets/key-ring.js";
import type { Database } from "../store/sql/database-types.js";
import { EgressCaRepository } from "../store/sql/egress-ca-repository.js";

export async function serveEgress(
  config: GatewayConfig,
  db: Kysely<Database> | undefined,
  log: Logger,
): Promise<GatewayEgress | undefined> {
  if (!config.pools.some((pool) => pool.egress)) return undefined;
  try {
    const ca = await loadEgressCa({
      settings: config.egress,
      deployment: config.deployment,
      ...(db ? { store: new EgressCaRepository(db) } : {}),
      ...(config.secrets.keys === undefined ? {} : { sealer: KeyRing.parse(config.secrets.keys) }),
    });
    const injection = await egressInjectionOf(ca, config.egress);
    return new GatewayEgress(config.egress, log, undefined, { injection });
  } catch (error) {
    log.warn(
      { err: error },
      "egress without credential injection: no egress CA (egress.caCertFile and egress.caKeyFile, or a secrets key ring)",
    );
    return new GatewayEgress(config.egress, log);
  }
}
