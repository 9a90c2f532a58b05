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
import { keyRingOf } from "../secrets/secrets-settings.js";
import type { Database } from "../store/sql/database-types.js";
import { EgressCaRepository } from "../store/sql/egress-ca-repository.js";

/** The proxy, before anything is read from Postgres (serve checks its runtime first). */
export function serveEgress(config: GatewayConfig, log: Logger): GatewayEgress | undefined {
  return config.pools.some((pool) => pool.egress) ? new GatewayEgress(config.egress, log) : undefined;
}

/** Credential injection for the proxy, once the database is there (the CA may be kept in it). */
export async function enableEgressInjection(
  egress: GatewayEgress | undefined,
  config: GatewayConfig,
  db: Kysely<Database>,
  log: Logger,
): Promise<void> {
  if (!egress) return;
  try {
    const ca = await loadEgressCa({
      settings: config.egress,
      deployment: config.deployment,
      store: new EgressCaRepository(db),
      sealer: keyRingOf(config.secrets),
    });
    egress.useInjection(await egressInjectionOf(ca, config.egress));
  } catch (error) {
    log.warn(
      { err: error },
      "egress without credential injection: no egress CA (egress.caCertFile and egress.caKeyFile, or a secrets key ring)",
    );
  }
}
